package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// Corrections from the dashboard: each key page of a counter (stock,
// balance, points, quota, a declared type) and of a coupon shows the row
// beside its ledger and, to operators, a form that posts to
// POST /resources/:type/:key/correct (models.CorrectCounter,
// models.CorrectCoupon). A page reached from a stopped release carries the
// order in ?for=, so the correction is audited under that order too and
// the flash offers its rerun.

// fixFor reads the order a key page was opened for (?for=); one that is not
// an order number is ignored, as a link's stray parameter.
func fixFor(c *echo.Context) string {
	if no := c.QueryParam("for"); models.ValidOrderNo(no) {
		return no
	}
	return ""
}

// counterFix reads key's row and ledger for its section on a key page;
// nil when the key has no row.
func (s *server) counterFix(c *echo.Context, t models.ResourceType, key, unit string) (*views.CounterFix, error) {
	l, err := s.store.CounterLedgerOf(c.Request().Context(), t, key)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &views.CounterFix{Type: string(t), Key: key, Unit: unit,
		Row:    [3]int64{l.Row.Available, l.Row.Locked, l.Row.Spent},
		Ledger: [3]int64{l.Ledger.Available, l.Ledger.Locked, l.Ledger.Spent},
		For:    fixFor(c), Back: fixBack(c), Max: s.store.CorrectMax(t)}, nil
}

// couponFix reads a coupon and its ledger for its section on the coupon
// page; nil when there is no such coupon.
func (s *server) couponFix(c *echo.Context, id int64) (*views.CouponFix, error) {
	v := &views.CouponFix{ID: id, For: fixFor(c), Back: fixBack(c)}
	l, err := s.store.CouponLedgerOf(c.Request().Context(), id)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return nil, nil
	case errors.Is(err, models.ErrInvalid):
		v.Missing = true
		return v, nil
	case err != nil:
		return nil, err
	}
	v.Status, v.Order, v.Expire = string(l.Coupon.Status), derefOr(l.Coupon.OrderNo), l.Coupon.ExpireAt
	v.LedgerStatus, v.LedgerOrder, v.LedgerExpire = string(l.Status), derefOr(l.OrderNo), l.ExpireAt
	return v, nil
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// correctSubmit is POST /resources/:type/:key/correct. Bad input goes back
// with a message and changes nothing; a correction goes back with what it
// did.
func (s *server) correctSubmit(c *echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxRerunFormBytes)
	if err := r.ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	t, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return fmt.Errorf("%w: %v", models.ErrNotFound, err)
	}
	key := c.Param("key")
	back := localPath(r.PostForm.Get("back"))
	if back == "/" {
		back = correctBack(s.store.KeyPage(t, key))
	}
	forOrder := strings.TrimSpace(r.PostForm.Get("for"))
	if forOrder != "" && !models.ValidOrderNo(forOrder) {
		return invalidf("order %q is not an order number", forOrder)
	}
	p := flashPage(c)
	p.Labels, p.Counters = s.labels, s.counters
	reason, err := formReason(c, back)
	if reason == "" {
		return err
	}
	ctx := r.Context()
	var msg string
	if t == models.ResCoupon {
		l, err := s.store.CorrectCoupon(ctx, key, reason, forOrder, actor(c))
		if err != nil {
			return s.correctFailed(c, p, back, t, key, err)
		}
		state := p.Code(string(l.Status))
		if l.OrderNo != nil {
			state += " · " + *l.OrderNo
		}
		msg = p.Tf("fix.flash.coupon", key, state)
	} else {
		most := s.store.CorrectMax(t)
		if most == 0 {
			return invalidf("%s is not counted: it has no amounts to correct", t)
		}
		raw := strings.TrimSpace(r.PostForm.Get("available"))
		n, perr := strconv.ParseInt(raw, 10, 64)
		// What was typed comes back cut: the flash is a cookie.
		if perr != nil || strings.TrimLeft(raw, "0123456789") != "" || n > most {
			return redirectWithFlash(c, back, false, p.Tf("fix.flash.bad", p.Num(most), clipTyped(raw)))
		}
		seen, err := seenForm(r.PostForm)
		if err != nil {
			return err
		}
		fix, err := s.store.CorrectCounter(ctx, t, key, models.CounterFix{Available: n, Reason: reason, ForOrder: forOrder, Seen: seen}, actor(c))
		if err != nil {
			return s.correctFailed(c, p, back, t, key, err)
		}
		msg = p.Tf("fix.flash.counter", p.Code(string(t))+" "+key, correctionWords(p, t, fix))
	}
	if forOrder != "" {
		msg += " " + p.Tf("fix.flash.rerun", forOrder)
	}
	return redirectWithFlash(c, back, true, msg)
}

// seenForm reads the row the form was drawn with (seen_available,
// seen_locked, seen_spent): nil when the form has none, as an older page's.
func seenForm(f url.Values) (*models.CounterState, error) {
	names := [3]string{"seen_available", "seen_locked", "seen_spent"}
	if f.Get(names[0]) == "" && f.Get(names[1]) == "" && f.Get(names[2]) == "" {
		return nil, nil
	}
	var v [3]int64
	for i, name := range names {
		n, err := strconv.ParseInt(f.Get(name), 10, 64)
		if err != nil || n < 0 {
			return nil, invalidf("%s %q is not an amount: the form was changed; reload the page", name, clipTyped(f.Get(name)))
		}
		v[i] = n
	}
	return &models.CounterState{Available: v[0], Locked: v[1], Spent: v[2]}, nil
}

// clipTyped cuts what was typed, echoed in a message, to 40 characters.
func clipTyped(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// correctFailed maps a refused correction: nothing to correct goes back
// saying so; a type that cannot be corrected or a key that does not exist
// is the error page; any other refusal goes back with its message.
func (s *server) correctFailed(c *echo.Context, p views.Page, back string, t models.ResourceType, key string, err error) error {
	switch {
	case errors.Is(err, models.ErrChangedSince):
		return redirectWithFlash(c, back, false, p.Tf("fix.flash.changed", p.Code(string(t))+" "+key))
	case errors.Is(err, models.ErrNothingToCorrect):
		return redirectWithFlash(c, back, false, p.Tf("fix.flash.nothing", p.Code(string(t))+" "+key))
	case errors.Is(err, models.ErrNotFound), errors.Is(err, models.ErrResourceNotFound):
		return err
	}
	var me *models.Error
	if errors.As(err, &me) && !errors.Is(err, models.ErrInvalid) {
		return redirectWithFlash(c, back, false, p.Say(err.Error()))
	}
	return err
}

// correctBack is where a correction without a page to return to goes: the
// key's page, or the resource types' list.
func correctBack(page string) string {
	if page == "" {
		return "/resources"
	}
	return page
}

// correctionWords says what a correction changed, amount by amount, in the
// viewer's language: "available 5 → 3, locked 0 → 2".
func correctionWords(p views.Page, t models.ResourceType, fix models.Correction) string {
	names := p.AmountNames(string(t))
	unit := string(t)
	before := [3]int64{fix.Before.Available, fix.Before.Locked, fix.Before.Spent}
	after := [3]int64{fix.After.Available, fix.After.Locked, fix.After.Spent}
	var parts []string
	for i, name := range names {
		if before[i] != after[i] {
			parts = append(parts, p.Tf("fix.change", name, p.Amount(unit, before[i]), p.Amount(unit, after[i])))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, p.Tf("fix.recorded", p.Amount(unit, fix.Recorded)))
	}
	return strings.Join(parts, p.T("fix.sep"))
}

// withFor adds ?for=order to a key page's URL, so the page's correction is
// made for that order, and &back=, where the correction returns (the page
// itself when "").
func withFor(page, order, back string) string {
	if page == "" || order == "" {
		return page
	}
	q := url.Values{"for": {order}}
	if back != "" {
		q.Set("back", back)
	}
	sep := "?"
	if strings.Contains(page, "?") {
		sep = "&"
	}
	return page + sep + q.Encode() + "#fix"
}

// fixBack is where a key page's correction returns: the page that sent the
// operator here (?back=, a path of ours), or the key page itself.
func fixBack(c *echo.Context) string {
	if back := c.QueryParam("back"); back != "" && localPath(back) == back {
		return back
	}
	return c.Request().URL.RequestURI()
}
