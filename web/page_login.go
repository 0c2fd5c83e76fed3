package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
	"unhold/views"
)

// Login form fields are bounded before anything looks at them; the models
// check names and passwords properly.
const (
	maxLoginName     = 256
	maxLoginPassword = 1024
)

// loginForm is GET /login. Someone already signed in goes where they were
// heading.
func (s *server) loginForm(c *echo.Context) error {
	next := nextPath(c.QueryParam("next"))
	if principalOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	v := views.LoginView{Next: next}
	if c.QueryParam("ended") == "1" {
		v.Error = "SESSION_ENDED"
	}
	return render(c, http.StatusOK, views.LoginPage(s.page(c, "login.title", ""), v))
}

// loginSubmit is POST /login: throttled, then checked, then a new session
// token (never the one the browser came with) and back where they were.
func (s *server) loginSubmit(c *echo.Context) error {
	r := c.Request()
	name, password := c.FormValue("name"), c.FormValue("password")
	v := views.LoginView{Name: name, Next: nextPath(c.FormValue("next"))}
	if len(name) > maxLoginName || len(password) > maxLoginPassword {
		v.Name, v.Error = "", "INVALID_INPUT"
		return render(c, http.StatusBadRequest, views.LoginPage(s.page(c, "login.title", ""), v))
	}
	token, _, err := s.auth.Login(r.Context(), auth.LoginRequest{Name: name, Password: password,
		IP: c.RealIP(), UserAgent: r.UserAgent(), Policy: s.sessions})
	if err != nil {
		p := s.page(c, "login.title", "")
		var te *auth.ThrottledError
		status := http.StatusUnauthorized
		switch {
		case errors.As(err, &te):
			status, v.Error = http.StatusTooManyRequests, "LOGIN_THROTTLED"
			minutes := int(math.Ceil(te.RetryAfter.Minutes()))
			v.RetryAfter = retryWords(p.Lang, max(minutes, 1))
			setRetryAfter(c, te.RetryAfter)
		case errors.Is(err, auth.ErrBadCredentials):
			v.Error = "BAD_CREDENTIALS"
		case errors.Is(err, models.ErrInvalid):
			status, v.Error = http.StatusBadRequest, "BAD_CREDENTIALS"
		default:
			return err
		}
		return render(c, status, views.LoginPage(p, v))
	}
	if old := principalOf(c); old != nil {
		if err := s.auth.Logout(r.Context(), old.Session, old.Name); err != nil {
			return err
		}
	}
	s.setSessionCookie(c, token)
	// The CSRF token is bound to the new session from now on; the next
	// signed-out visit starts from a new pre-session id.
	setCSRFCookie(c, randomToken(32))
	return c.Redirect(http.StatusSeeOther, v.Next)
}

// logout is POST /logout.
func (s *server) logout(c *echo.Context) error {
	p := principalOf(c)
	if err := s.auth.Logout(c.Request().Context(), p.Session, p.Name); err != nil {
		return err
	}
	s.clearSessionCookie(c)
	return c.Redirect(http.StatusSeeOther, "/login")
}

// nextPath is where to go after signing in: a path on this site, never the
// login form itself.
func nextPath(next string) string {
	next = localPath(next)
	if next == "/login" || strings.HasPrefix(next, "/login?") {
		return "/"
	}
	return next
}

// setRetryAfter tells a throttled client when to try again, in whole
// seconds rounded up.
func setRetryAfter(c *echo.Context, d time.Duration) {
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
}

// retryWords says "3 分钟" or "3 min".
func retryWords(lang views.Lang, minutes int) string {
	if lang == views.LangEN {
		return fmt.Sprintf("%d min", minutes)
	}
	return fmt.Sprintf("%d 分钟", minutes)
}
