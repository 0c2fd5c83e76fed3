package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
	"unhold/views"
)

// passwordForm is GET /account/password: change one's own password.
func (s *server) passwordForm(c *echo.Context) error {
	return render(c, http.StatusOK, views.PasswordPage(s.page(c, "password.title", ""),
		views.PasswordView{MinLen: auth.MinPasswordLen}))
}

// passwordSubmit is POST /account/password. It needs the current password,
// and ends the user's other sessions.
func (s *server) passwordSubmit(c *echo.Context) error {
	who := principalOf(c)
	oldPW, newPW := c.FormValue("old"), c.FormValue("new")
	v := views.PasswordView{MinLen: auth.MinPasswordLen}
	status := http.StatusBadRequest
	if newPW != c.FormValue("confirm") {
		v.Error = "PASSWORD_MISMATCH"
	} else {
		err := s.auth.ChangePassword(c.Request().Context(), who.UserID, oldPW, newPW, who.Session)
		var throttled *auth.ThrottledError
		switch {
		case err == nil:
			return redirectWithFlash(c, "/", true, flashPage(c).T("password.changed"))
		case errors.As(err, &throttled):
			status, v.Error = http.StatusTooManyRequests, "LOGIN_THROTTLED"
			setRetryAfter(c, throttled.RetryAfter)
		case errors.Is(err, auth.ErrBadCredentials):
			v.Error = "BAD_CREDENTIALS"
		case errors.Is(err, models.ErrInvalid):
			v.Error = "PASSWORD_WEAK"
		default:
			return err
		}
	}
	return render(c, status, views.PasswordPage(s.page(c, "password.title", ""), v))
}
