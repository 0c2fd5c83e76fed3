package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// maxBody is the largest request body the API reads.
const maxBody = 64 << 10

// busyRetryAfter is when a 503 BUSY answer asks the client to try again.
const busyRetryAfter = time.Second

// apiError is a refusal the web layer makes itself, before the domain is
// called, when it needs a status or code that no models.Error has.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Message }

// errorResponse is the shape of every API error.
type errorResponse struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// invalidf makes a 400 INVALID_INPUT error, worded like the domain's.
func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{models.ErrInvalid}, a...)...)
}

// readBody reads a request body of at most maxBody bytes. An empty body is
// refused when required and otherwise returns nil; a present one must be
// sent as application/json.
func readBody(c *echo.Context, required bool) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > maxBody {
		return nil, errBodyTooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, invalidf("could not read the request body: %v", err)
	}
	if len(b) > maxBody {
		return nil, errBodyTooLarge()
	}
	// PostgreSQL cannot store NUL in text; no field of ours means one.
	if bytes.Contains(b, []byte(`\u0000`)) {
		return nil, invalidf("text in the body must not contain NUL (\\u0000)")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if required {
			return nil, invalidf("a JSON request body is required")
		}
		return nil, nil
	}
	ct := r.Header.Get(echo.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE",
			Message: fmt.Sprintf("Content-Type must be application/json, not %q", ct)}
	}
	return b, nil
}

func errBodyTooLarge() error {
	return &apiError{Status: http.StatusBadRequest, Code: "BODY_TOO_LARGE",
		Message: fmt.Sprintf("request body is larger than %d bytes", maxBody)}
}

// readJSON decodes the request body into dst with decodeJSON. When the body
// is optional and empty, dst is left as it is.
func readJSON(c *echo.Context, dst any, required bool) error {
	b, err := readBody(c, required)
	if err != nil || b == nil {
		return err
	}
	return decodeJSON(bytes.NewReader(b), dst)
}

// decodeJSON decodes exactly one JSON value from r into dst: unknown fields,
// wrong types and anything after the value are refused. Every error it
// returns wraps models.ErrInvalid and names what is wrong.
func decodeJSON(r io.Reader, dst any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidf("unexpected data after the JSON value")
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return invalidf("a JSON request body is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("malformed JSON: the body ends too early")
	case errors.As(err, &syn):
		return invalidf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalidf("the body must be %s, not %s", kindName(typ.Type), typ.Value)
		}
		return invalidf("%s must be %s, not %s", typ.Field, kindName(typ.Type), typ.Value)
	}
	// encoding/json reports an unknown field only as text ("json: unknown
	// field \"x\""), which already names the field.
	return invalidf("%s", strings.TrimPrefix(err.Error(), "json: "))
}

// kindName says in words what JSON a Go type accepts.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// handleError is the server's echo.HTTPErrorHandler: every error becomes
// {"error":{"code","message"}}. Domain refusals keep their code and their
// text; anything unexpected is logged and answered 500 INTERNAL.
func (s *server) handleError(c *echo.Context, err error) {
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil && resp.Committed {
		s.log.WarnContext(c.Request().Context(), "error after the response was sent", s.requestAttrs(c, err)...)
		return
	}
	status, detail := s.classify(c, err)
	switch {
	case c.Request().Method == http.MethodHead:
		err = c.NoContent(status)
	case isAPI(c.Request().URL.Path):
		err = c.JSON(status, errorResponse{Error: detail})
	default:
		err = render(c, status, views.ErrorPage(s.page(c, "error.title", ""), status, detail.Code, detail.Message))
	}
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "could not send the error response", s.requestAttrs(c, err)...)
	}
}

func (s *server) classify(c *echo.Context, err error) (int, errorDetail) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status, errorDetail{Code: ae.Code, Message: ae.Message}
	}
	if models.IsBusy(err) {
		// The database was too busy to answer (another process held
		// SQLite's write lock past the busy timeout, or PostgreSQL gave up
		// on a lock): the transaction that met it rolled back, and the
		// same request a moment later may pass.
		s.log.WarnContext(c.Request().Context(), "database busy", s.requestAttrs(c, err)...)
		setRetryAfter(c, busyRetryAfter)
		return http.StatusServiceUnavailable, errorDetail{Code: "BUSY", Message: "the database is busy; try again shortly"}
	}
	var me *models.Error
	if errors.As(err, &me) {
		status := http.StatusConflict
		switch {
		case errors.Is(err, models.ErrInvalid):
			status = http.StatusBadRequest
		case errors.Is(err, models.ErrNotFound), errors.Is(err, models.ErrResourceNotFound), errors.Is(err, models.ErrLineNotFound):
			status = http.StatusNotFound
		case errors.Is(err, models.ErrBadAssignee):
			// The body is well formed; the name in it cannot take the item.
			status = http.StatusUnprocessableEntity
		case errors.Is(err, models.ErrOwnRequest), errors.Is(err, models.ErrApproverRole):
			// The request is someone's to decide, not this person's.
			status = http.StatusForbidden
		case errors.Is(err, models.ErrUserLimit):
			// The message says when the limit frees.
			status = http.StatusTooManyRequests
		case errors.Is(err, models.ErrRemoteUnavailable), errors.Is(err, models.ErrPlacementPending):
			// A remote service did not answer (the order was closed and
			// its holds go back; placing again may pass), or a payment
			// came before the placement's locks were answered (paying
			// again shortly will pass or find the order closed).
			status = http.StatusServiceUnavailable
			setRetryAfter(c, busyRetryAfter)
		case errors.Is(err, models.ErrRemoteProtocol):
			// What answered a lock did not prove itself the service: a
			// gateway's answer, not a refusal (the order was closed).
			status = http.StatusBadGateway
		}
		return status, errorDetail{Code: me.Code, Message: err.Error()}
	}
	r := c.Request()
	switch sc := echo.StatusCode(err); {
	case sc == http.StatusNotFound:
		return sc, errorDetail{Code: "NOT_FOUND", Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)}
	case sc == http.StatusMethodNotAllowed:
		return sc, errorDetail{Code: "METHOD_NOT_ALLOWED", Message: fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)}
	case sc >= 400 && sc < 500:
		text := http.StatusText(sc)
		return sc, errorDetail{Code: strings.ToUpper(strings.ReplaceAll(text, " ", "_")), Message: strings.ToLower(text)}
	}
	s.log.ErrorContext(r.Context(), "request failed", s.requestAttrs(c, err)...)
	return http.StatusInternalServerError, errorDetail{Code: "INTERNAL", Message: "internal error"}
}

// requestAttrs names the request in a log line: method, path, every path
// parameter (order_no, sku_id, ...) and the error.
func (s *server) requestAttrs(c *echo.Context, err error) []any {
	r := c.Request()
	attrs := []any{slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	for _, pv := range c.PathValues() {
		attrs = append(attrs, slog.String(pv.Name, pv.Value))
	}
	return append(attrs, slog.Any("error", err))
}

// keyParam reads a path parameter that names a SKU, user, activity or slot.
func keyParam(c *echo.Context, name string) (string, error) {
	v := c.Param(name)
	if !models.ValidKey(v) {
		return "", invalidf("%s must be 1-64 letters, digits or -_.:, not %q", name, v)
	}
	return v, nil
}

// orderNoParam reads the order number from the path.
func orderNoParam(c *echo.Context) (string, error) {
	v := c.Param("order_no")
	if !models.ValidOrderNo(v) {
		return "", invalidf("order_no must be 1-40 letters, digits, '-' or '_', not %q", v)
	}
	return v, nil
}
