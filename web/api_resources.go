package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// resourceTypeView is one resource type of the registry: its name, how
// it keeps holds, and for a remote type its service.
type resourceTypeView struct {
	Type    models.ResourceType `json:"type"`
	Kind    models.ResourceKind `json:"kind"`
	Service *remoteServiceView  `json:"service,omitempty"`
}

// remoteServiceView is a remote type's service; Token says whether one is
// sent, never what it is. UnverifiedAnswers: declared strict: false, any
// 2xx counts as done without echoing the call's idempotency key.
type remoteServiceView struct {
	URL               string `json:"url"`
	TimeoutMS         int64  `json:"timeout_ms"`
	Token             bool   `json:"token"`
	UnverifiedAnswers bool   `json:"unverified_answers"`
}

type resourceTypesView struct {
	Types []resourceTypeView `json:"types"`
}

// listResourceTypes lists every resource type, built in, declared and
// remote, in the order holds are taken.
func (s *server) listResourceTypes(c *echo.Context) error {
	v := resourceTypesView{Types: []resourceTypeView{}}
	for _, t := range s.store.Types() {
		tv := resourceTypeView{Type: t, Kind: s.store.Resource(t).Kind()}
		if rs, ok := s.store.RemoteService(t); ok {
			tv.Service = &remoteServiceView{URL: rs.URL, TimeoutMS: rs.Timeout.Milliseconds(), Token: rs.Token,
				UnverifiedAnswers: !rs.Strict}
		}
		v.Types = append(v.Types, tv)
	}
	return c.JSON(http.StatusOK, v)
}

type putCounterBody struct {
	Available *int64 `json:"available"`
}

// counterTarget reads the :type and :key of a counter route.
func (s *server) counterTarget(c *echo.Context) (models.ResourceType, string, error) {
	t, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return "", "", err
	}
	key, err := keyParam(c, "key")
	return t, key, err
}

// getCounter reads one key of any counter type, built-in or declared:
// {"available", "locked", "spent"}.
func (s *server) getCounter(c *echo.Context) error {
	t, key, err := s.counterTarget(c)
	if err != nil {
		return err
	}
	st, err := s.store.Counter(c.Request().Context(), t, key)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// putCounter sets a declared counter key's available amount, creating the
// key when new.
func (s *server) putCounter(c *echo.Context) error {
	t, key, err := s.counterTarget(c)
	if err != nil {
		return err
	}
	var body putCounterBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	if body.Available == nil {
		return invalidf("available is required")
	}
	st, err := s.store.SetDeclared(c.Request().Context(), t, key, *body.Available, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// correctBody is a correction: for a counter, the available amount
// counted; for a coupon, nothing but the reason. OrderNo names the order
// whose stopped release it is for.
type correctBody struct {
	Available *int64 `json:"available,omitempty"`
	Reason    string `json:"reason"`
	OrderNo   string `json:"order_no,omitempty"`
	// Seen is the counter as the caller read it: a key that changed since
	// is refused, 409 CHANGED_SINCE.
	Seen *models.CounterState `json:"seen,omitempty"`
}

// correctView is what a correction did: a counter's row before and after
// and what its ADJUST row recorded, or the coupon as put back.
type correctView struct {
	Before   *models.CounterState `json:"before,omitempty"`
	After    *models.CounterState `json:"after,omitempty"`
	Recorded *int64               `json:"recorded,omitempty"`
	Coupon   *models.Coupon       `json:"coupon,omitempty"`
}

// apiCorrect is POST /api/v1/resources/:type/:key/correct: the correction
// the key pages' form makes (models.CorrectCounter, models.CorrectCoupon).
// 409 NOTHING_TO_CORRECT when the row already is what it would become.
func (s *server) apiCorrect(c *echo.Context) error {
	t, key, err := s.counterTarget(c)
	if err != nil {
		return err
	}
	var body correctBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if t == models.ResCoupon {
		if body.Available != nil {
			return invalidf("a coupon is put back to its ledger's state: leave available out")
		}
		l, err := s.store.CorrectCoupon(ctx, key, body.Reason, body.OrderNo, actor(c))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, correctView{Coupon: &l.Coupon})
	}
	if body.Available == nil {
		return invalidf("available is required: what was counted")
	}
	fix, err := s.store.CorrectCounter(ctx, t, key,
		models.CounterFix{Available: *body.Available, Reason: body.Reason, ForOrder: body.OrderNo, Seen: body.Seen}, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, correctView{Before: &fix.Before, After: &fix.After, Recorded: &fix.Recorded})
}
