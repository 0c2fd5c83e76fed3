package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// usersPage is GET /admin/users.
func (s *server) usersPage(c *echo.Context) error {
	return s.renderUsers(c, http.StatusOK, nil)
}

// renderUsers shows the users page, with a secret to show once when a
// password was just generated.
func (s *server) renderUsers(c *echo.Context, status int, secret *views.Secret) error {
	ctx := c.Request().Context()
	users, err := s.store.Users(ctx)
	if err != nil {
		return err
	}
	me := principalOf(c)
	v := views.UsersView{Roles: roleNames(), Secret: secret, MinLen: models.MinPasswordLen}
	for _, u := range users {
		n, err := s.store.UserSessions(ctx, u.ID)
		if err != nil {
			return err
		}
		base := "/admin/users/" + strconv.FormatInt(u.ID, 10)
		v.Users = append(v.Users, views.UserRow{ID: u.ID, Name: u.Name, Role: string(u.Role), Disabled: u.Disabled,
			Self: me != nil && me.UserID == u.ID, LastLoginAt: u.LastLoginAt, Sessions: n, CreatedAt: u.CreatedAt,
			RoleURL: base + "/role", DisableURL: base + "/disable", EnableURL: base + "/enable", ResetURL: base + "/reset"})
	}
	return render(c, status, views.UsersPage(s.page(c, "users.title", "users"), v))
}

// userCreate is POST /admin/users. An empty password field means "make one
// up": it is shown once, on the page this answers with.
func (s *server) userCreate(c *echo.Context) error {
	t := flashPage(c)
	role, err := models.ParseRole(c.FormValue("role"))
	if err != nil {
		return redirectWithFlash(c, "/admin/users", false, t.T("users.flash.bad_role"))
	}
	name, password := c.FormValue("name"), c.FormValue("password")
	generated := password == ""
	if generated {
		password = newPassword()
	}
	u, err := s.store.CreateUser(c.Request().Context(), name, role, password, actor(c))
	if err != nil {
		return refusal(c, "/admin/users", err)
	}
	if !generated {
		return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.created", u.Name))
	}
	return s.renderUsers(c, http.StatusOK, &views.Secret{Title: t.T("users.secret.created"), For: u.Name, Value: password})
}

// userRole is POST /admin/users/:id/role. The user's next request renews
// their session with the new role.
func (s *server) userRole(c *echo.Context) error {
	id, err := userIDParam(c)
	if err != nil {
		return err
	}
	t := flashPage(c)
	role, err := models.ParseRole(c.FormValue("role"))
	if err != nil {
		return redirectWithFlash(c, "/admin/users", false, t.T("users.flash.bad_role"))
	}
	if err := s.store.SetUserRole(c.Request().Context(), id, role, actor(c)); err != nil {
		return refusal(c, "/admin/users", err)
	}
	return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.role", t.Code("role."+string(role))))
}

// userDisable is POST /admin/users/:id/disable: every session of the user
// ends at once.
func (s *server) userDisable(c *echo.Context) error { return s.userSetDisabled(c, true) }

// userEnable is POST /admin/users/:id/enable.
func (s *server) userEnable(c *echo.Context) error { return s.userSetDisabled(c, false) }

func (s *server) userSetDisabled(c *echo.Context, disabled bool) error {
	id, err := userIDParam(c)
	if err != nil {
		return err
	}
	if err := s.store.SetUserDisabled(c.Request().Context(), id, disabled, actor(c)); err != nil {
		return refusal(c, "/admin/users", err)
	}
	key := "users.flash.enabled"
	if disabled {
		key = "users.flash.disabled"
	}
	return redirectWithFlash(c, "/admin/users", true, flashPage(c).T(key))
}

// userReset is POST /admin/users/:id/reset: a new password (typed, or made
// up and shown once) and the end of every session of the user.
func (s *server) userReset(c *echo.Context) error {
	id, err := userIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := s.store.UserByID(ctx, id)
	if err != nil {
		return err
	}
	t := flashPage(c)
	password := c.FormValue("password")
	generated := password == ""
	if generated {
		password = newPassword()
	}
	if err := s.store.ResetPassword(ctx, id, password, actor(c)); err != nil {
		return refusal(c, "/admin/users", err)
	}
	if !generated {
		return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.reset", u.Name))
	}
	return s.renderUsers(c, http.StatusOK, &views.Secret{Title: t.T("users.secret.reset"), For: u.Name, Value: password})
}

// refusal turns a refusal of the models into a flash on the page at to;
// anything else is an error.
func refusal(c *echo.Context, to string, err error) error {
	var me *models.Error
	if !errors.As(err, &me) {
		return err
	}
	t := flashPage(c)
	text := t.Code(me.Code)
	if errors.Is(err, models.ErrInvalid) {
		text = fmt.Sprintf("%s: %s", text, err.Error())
	}
	return redirectWithFlash(c, to, false, text)
}

// userIDParam reads a user id from the path.
func userIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a user id is a positive whole number, not %q", raw)
	}
	return id, nil
}

// roleNames lists the roles for a form's select.
func roleNames() []string {
	out := make([]string, 0, len(models.Roles))
	for _, r := range models.Roles {
		out = append(out, string(r))
	}
	return out
}

// newPassword makes up a password: 18 random bytes, 24 characters.
func newPassword() string { return randomToken(18) }
