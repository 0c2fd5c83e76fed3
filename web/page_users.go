package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/auth"
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
	users, err := s.auth.Users(ctx)
	if err != nil {
		return err
	}
	tokens, err := s.auth.LiveTokensByCreator(ctx)
	if err != nil {
		return err
	}
	me := principalOf(c)
	v := views.UsersView{Roles: roleNames(), Secret: secret, MinLen: auth.MinPasswordLen}
	for _, u := range users {
		n, err := s.auth.UserSessions(ctx, u.ID)
		if err != nil {
			return err
		}
		base := "/admin/users/" + strconv.FormatInt(u.ID, 10)
		v.Users = append(v.Users, views.UserRow{ID: u.ID, Name: u.Name, Role: string(u.Role), Disabled: u.Disabled,
			Self: me != nil && me.UserID == u.ID, LastLoginAt: u.LastLoginAt, Sessions: n, Tokens: tokens[u.Name],
			CreatedAt: u.CreatedAt,
			RoleURL:   base + "/role", DisableURL: base + "/disable", EnableURL: base + "/enable", ResetURL: base + "/reset"})
	}
	return render(c, status, views.UsersPage(s.page(c, "users.title", "users"), v))
}

// userCreate is POST /admin/users. An empty password field means "make one
// up": it is shown once, on the page this answers with.
func (s *server) userCreate(c *echo.Context) error {
	t := flashPage(c)
	name, password := c.FormValue("name"), c.FormValue("password")
	role, err := parseRole(c.FormValue("role"))
	if err != nil {
		return s.refusal(c, "/admin/users", "user_create", "user:"+name, err)
	}
	generated := password == ""
	if generated {
		password = auth.NewPassword()
	}
	u, err := s.auth.CreateUser(c.Request().Context(), name, role, password, actor(c))
	if err != nil {
		return s.refusal(c, "/admin/users", "user_create", "user:"+name, err)
	}
	if !generated {
		return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.created", u.Name))
	}
	return s.renderUsers(c, http.StatusOK, &views.Secret{Title: t.T("users.secret.created"), For: u.Name, Value: password})
}

// userRole is POST /admin/users/:id/role. The user's next request renews
// their session with the new role.
func (s *server) userRole(c *echo.Context) error {
	u, err := s.otherUser(c, "user_role")
	if u == nil {
		return err
	}
	t := flashPage(c)
	role, err := parseRole(c.FormValue("role"))
	if err == nil {
		err = s.auth.SetUserRole(c.Request().Context(), u.ID, role, actor(c))
	}
	if err != nil {
		return s.refusal(c, "/admin/users", "user_role", "user:"+u.Name, err)
	}
	return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.role", t.Code("role."+string(role))))
}

// userDisable is POST /admin/users/:id/disable: every session of the user
// ends at once, and the API tokens they created are revoked.
func (s *server) userDisable(c *echo.Context) error { return s.userSetDisabled(c, true) }

// userEnable is POST /admin/users/:id/enable.
func (s *server) userEnable(c *echo.Context) error { return s.userSetDisabled(c, false) }

func (s *server) userSetDisabled(c *echo.Context, disabled bool) error {
	action := "user_enable"
	if disabled {
		action = "user_disable"
	}
	u, err := s.otherUser(c, action)
	if u == nil {
		return err
	}
	revoked, err := s.auth.SetUserDisabled(c.Request().Context(), u.ID, disabled, actor(c))
	if err != nil {
		return s.refusal(c, "/admin/users", action, "user:"+u.Name, err)
	}
	t := flashPage(c)
	switch {
	case !disabled:
		return redirectWithFlash(c, "/admin/users", true, t.T("users.flash.enabled"))
	case revoked > 0:
		return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.disabled.tokens", revoked))
	}
	return redirectWithFlash(c, "/admin/users", true, t.T("users.flash.disabled"))
}

// userReset is POST /admin/users/:id/reset: a new password (typed, or made
// up and shown once) and the end of every session of the user.
func (s *server) userReset(c *echo.Context) error {
	u, err := s.otherUser(c, "user_reset_password")
	if u == nil {
		return err
	}
	t := flashPage(c)
	password := c.FormValue("password")
	generated := password == ""
	if generated {
		password = auth.NewPassword()
	}
	if err := s.auth.ResetPassword(c.Request().Context(), u.ID, password, actor(c)); err != nil {
		return s.refusal(c, "/admin/users", "user_reset_password", "user:"+u.Name, err)
	}
	if !generated {
		return redirectWithFlash(c, "/admin/users", true, t.Tf("users.flash.reset", u.Name))
	}
	return s.renderUsers(c, http.StatusOK, &views.Secret{Title: t.T("users.secret.reset"), For: u.Name, Value: password})
}

// otherUser reads the user an admin action names. An admin's own account
// is refused (and the refusal audited): they change their password on the
// password page, and cannot lock themselves out of administration by a
// slip. A nil user comes with the answer to return.
func (s *server) otherUser(c *echo.Context, action string) (*auth.User, error) {
	id, err := userIDParam(c)
	if err != nil {
		return nil, err
	}
	u, err := s.auth.UserByID(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	if me := principalOf(c); me.UserID == u.ID {
		return nil, s.refusal(c, "/admin/users", action, "user:"+u.Name, errSelf)
	}
	return u, nil
}

// parseRole is auth.ParseRole refusing with BAD_ROLE, which the flash
// words in the viewer's language.
func parseRole(s string) (auth.Role, error) {
	r, err := auth.ParseRole(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q", errBadRole, s)
	}
	return r, nil
}

// errBadRole is a role that is none of viewer, operator and admin.
var errBadRole = &models.Error{Code: "BAD_ROLE", Message: "no such role"}

// errSelf is an admin acting on their own account.
var errSelf = &models.Error{Code: "SELF", Message: "admins change their own password on the password page, and cannot change their own role or disable themselves"}

// refusal answers a refused admin action: one audit row with outcome
// "refused" and why (past the first few of the actor in a minute, counted:
// see auditRefusal), then a flash on the page at to. An error that is not
// a refusal of the models is returned as it is.
func (s *server) refusal(c *echo.Context, to, action, target string, err error) error {
	var me *models.Error
	if !errors.As(err, &me) {
		return err
	}
	aerr := s.auditRefusal(c.Request().Context(), models.AuditEntry{Actor: actor(c), Action: action,
		Target: target, Outcome: "refused", Detail: me.Code + ": " + err.Error()})
	if aerr != nil {
		return aerr
	}
	return redirectWithFlash(c, to, false, refusalText(flashPage(c), me, err))
}

// refusalText words a refusal of the models, me found in err: its code in
// the viewer's language and, for bad input, the domain's words after its
// "invalid input:" prefix.
func refusalText(t views.Page, me *models.Error, err error) string {
	text := t.Code(me.Code)
	if errors.Is(err, models.ErrInvalid) {
		msg := err.Error()
		if i := strings.LastIndex(msg, models.ErrInvalid.Message+": "); i >= 0 {
			msg = msg[i+len(models.ErrInvalid.Message)+2:]
		}
		text = fmt.Sprintf("%s: %s", text, msg)
	}
	return text
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
	out := make([]string, 0, len(auth.Roles))
	for _, r := range auth.Roles {
		out = append(out, string(r))
	}
	return out
}
