package views

import (
	"strconv"
	"time"
)

// LoginView is the sign-in form.
type LoginView struct {
	Name, Next string
	// Error is a code: BAD_CREDENTIALS, LOGIN_THROTTLED (with RetryAfter,
	// already in words: "3 分钟"), INVALID_INPUT or SESSION_ENDED.
	Error      string
	RetryAfter string
}

// PasswordView is the form that changes one's own password.
type PasswordView struct {
	// Error is a code: BAD_CREDENTIALS (the current password is wrong),
	// PASSWORD_MISMATCH, PASSWORD_WEAK or INVALID_INPUT.
	Error  string
	MinLen int
}

// Secret is a password or API token shown once, right after it was made.
type Secret struct {
	Title string // what it is, in words
	For   string // the user or token it belongs to
	Value string
}

// UsersView is the user administration page.
type UsersView struct {
	Users  []UserRow
	Roles  []string // the roles a user may have, weakest first
	Secret *Secret
	MinLen int
}

// UserRow is one dashboard user. An empty URL hides its control.
type UserRow struct {
	ID                                       int64
	Name, Role                               string
	Disabled, Self                           bool
	LastLoginAt                              *time.Time
	Sessions                                 int64
	Tokens                                   int64 // live API tokens the user created, which disabling revokes
	CreatedAt                                time.Time
	RoleURL, DisableURL, EnableURL, ResetURL string
}

// TokensView is the API token administration page.
type TokensView struct {
	Tokens []TokenRow
	Roles  []string
	Secret *Secret
}

// TokenRow is one API token; only its prefix is ever shown.
type TokenRow struct {
	ID                            int64
	Name, Role, Prefix, CreatedBy string
	CreatedAt                     time.Time
	LastUsedAt, RevokedAt         *time.Time
	RevokeURL                     string
}

// AuditView is the audit log with its filter.
type AuditView struct {
	Actor, Action, Target, From, To string
	// Actions are the actions the log holds, for the filter's choices.
	Actions []string
	Rows    []AuditRow
	// FirstURL is set when this is not the first page; NextURL when there
	// is another.
	FirstURL, NextURL string
	// Error says, in words, what is wrong with the filter.
	Error string
	// Total is how many entries the filter selects; Over says more than
	// Total, the count's cap.
	Total int64
	Over  bool
	// Operational says the list holds the operational entries only,
	// without request metadata: the viewer is not an admin.
	Operational bool
}

// AuditRow is one audit entry.
type AuditRow struct {
	ID                                                int64
	At                                                time.Time
	Actor, Role, Action, Target, TargetURL            string
	Reason, Outcome, Detail, IP, RequestID, UserAgent string
}

// AuditURL is the page of one audit entry.
func AuditURL(id int64) string { return "/audit/" + strconv.FormatInt(id, 10) }

// tokenUsage is how a program sends an API token; it is code, not text.
const tokenUsage = "Authorization: Bearer uh_…"

// roleName names a role; an unknown one shows as stored.
func roleName(p Page, role string) string {
	if role == "" {
		return ""
	}
	if catalogHas("code.role." + role) {
		return p.T("code.role." + role)
	}
	return role
}

// authError words an error code of the login or password form: the form's
// own sentence when it has one, else the code's translation.
func authError(p Page, form, code string, arg any) string {
	key := form + ".err." + code
	if !catalogHas(key) {
		return p.Code(code)
	}
	if arg != nil {
		return p.Tf(key, arg)
	}
	return p.T(key)
}

// loginError words a LoginView's error.
func loginError(p Page, v LoginView) string {
	if v.Error == "LOGIN_THROTTLED" && v.RetryAfter == "" {
		return p.T("login.err.LOGIN_THROTTLED.later")
	}
	var arg any
	if v.Error == "LOGIN_THROTTLED" {
		arg = v.RetryAfter
	}
	return authError(p, "login", v.Error, arg)
}

// passwordError words a PasswordView's error.
func passwordError(p Page, v PasswordView) string {
	var arg any
	if v.Error == "PASSWORD_WEAK" {
		if v.MinLen <= 0 {
			return p.T("password.err.PASSWORD_WEAK.nolen")
		}
		arg = v.MinLen
	}
	return authError(p, "password", v.Error, arg)
}

// minLenAttr is a minlength attribute's value; "" leaves it out.
func minLenAttr(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// outcomeClass colours an audit outcome.
func outcomeClass(outcome string) string {
	switch outcome {
	case "ok", "started":
		return "ok-text"
	case "failed", "refused", "denied":
		return "bad"
	case "throttled", "already_running":
		return "warn"
	}
	return ""
}

func authID(id int64) string { return strconv.FormatInt(id, 10) }
