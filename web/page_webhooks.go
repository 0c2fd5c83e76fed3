package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// webhookRow maps a subscription to its row, with when a delivery of it
// last got through.
func (s *server) webhookRow(c *echo.Context, w models.WebhookSubscription) (views.WebhookRow, error) {
	last, err := s.store.WebhookLastDelivered(c.Request().Context(), w.ID)
	if err != nil {
		return views.WebhookRow{}, err
	}
	types := make([]string, len(w.Types))
	for i, t := range w.Types {
		types[i] = string(t)
	}
	return views.WebhookRow{ID: w.ID, URL: w.URL, Types: types, CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt,
		PausedAt: w.PausedAt, PausedReason: w.PausedReason, FailingSince: w.FailingSince, Backlog: w.Backlog,
		Failed: w.Failed, Oldest: w.Oldest, LastDelivered: last}, nil
}

// webhooksPage is GET /webhooks: the subscriptions, and the form that
// makes one.
func (s *server) webhooksPage(c *echo.Context) error {
	return s.renderWebhooks(c, http.StatusOK, nil, views.WebhookForm{})
}

// renderWebhooks shows the subscriptions with a new one's secret to show
// once, or the create form refused with why.
func (s *server) renderWebhooks(c *echo.Context, status int, secret *views.Secret, form views.WebhookForm) error {
	subs, err := s.store.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.WebhooksView{Secret: secret, Form: form, MinSecret: models.MinWebhookSecret}
	for _, t := range models.EventTypes {
		v.Types = append(v.Types, string(t))
	}
	for _, w := range subs {
		row, err := s.webhookRow(c, w)
		if err != nil {
			return err
		}
		v.Rows = append(v.Rows, row)
	}
	return render(c, status, views.WebhooksPage(s.page(c, "webhooks.title", "webhooks"), v))
}

// webhookCreate is POST /webhooks. The secret (typed, or made up) is shown
// on the page this answers with, and never again. Bad input is refused on
// the form, with the models' words, and nothing is made.
func (s *server) webhookCreate(c *echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	form := c.Request().PostForm
	f := views.WebhookForm{URL: strings.TrimSpace(form.Get("url")), Types: form["type"]}
	types, err := models.ParseEventTypes(strings.Join(f.Types, ","))
	var sub models.WebhookSubscription
	var secret string
	if err == nil {
		sub, secret, err = s.store.CreateWebhook(c.Request().Context(), models.NewWebhook{URL: f.URL, Types: types,
			Secret: form.Get("secret")}, actor(c))
	}
	var me *models.Error
	if errors.As(err, &me) {
		aerr := s.auditRefusal(c.Request().Context(), models.AuditEntry{Actor: actor(c), Action: "webhook_create",
			Target: "webhook:new", Outcome: "refused", Detail: me.Code + ": " + err.Error()})
		if aerr != nil {
			return aerr
		}
		f.Error = refusalText(flashPage(c), me, err)
		return s.renderWebhooks(c, http.StatusUnprocessableEntity, nil, f)
	}
	if err != nil {
		return err
	}
	t := flashPage(c)
	return s.renderWebhooks(c, http.StatusOK, &views.Secret{Title: t.T("webhooks.secret.title"), For: sub.URL, Value: secret},
		views.WebhookForm{})
}

// webhookPage is GET /webhooks/:id: the subscription (never its secret),
// its controls, and a page of its deliveries, newest first, of the status
// asked for.
func (s *server) webhookPage(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	st, err := models.ParseDeliveryStatus(c.QueryParam("status"))
	if err != nil {
		return err
	}
	var before int64
	if raw := c.QueryParam("before"); raw != "" {
		if before, err = strconv.ParseInt(raw, 10, 64); err != nil || before <= 0 {
			return invalidf("before is a positive whole number, not %q", raw)
		}
	}
	ctx := c.Request().Context()
	sub, err := s.store.Webhook(ctx, id)
	if err != nil {
		return err
	}
	page, err := s.store.WebhookDeliveries(ctx, id, models.DeliveryFilter{Status: st, Before: before})
	if err != nil {
		return err
	}
	row, err := s.webhookRow(c, sub)
	if err != nil {
		return err
	}
	base := views.WebhookURL(id)
	v := views.WebhookDetailView{Sub: row, Status: string(st)}
	for _, st := range models.DeliveryStatuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	if before > 0 {
		v.FirstURL = views.Query(base, "status", string(st))
	}
	if page.Next > 0 {
		v.NextURL = views.Query(base, "status", string(st), "before", strconv.FormatInt(page.Next, 10))
	}
	now := s.store.Now()
	for _, d := range page.Deliveries {
		sending := d.LeaseUntil != nil && d.LeaseUntil.After(now)
		r := views.DeliveryRow{ID: d.ID, EventID: d.EventID, EventType: string(d.EventType), OrderNo: d.OrderNo,
			Status: string(d.Status), Tries: d.Tries, NextAt: d.NextAt, Sending: sending, LastStatus: d.LastStatus,
			LastError: d.LastError, LastAnswer: d.LastAnswer, DeliveredAt: d.DeliveredAt}
		// As RedeliverWebhook decides: a waiting one is sent anyway.
		if d.Status == models.DeliveryFailed || d.Status == models.DeliveryDelivered || (d.Status == models.DeliveryRetry && !sending) {
			r.RedeliverURL = base + "/deliveries/" + strconv.FormatInt(d.ID, 10) + "/redeliver"
		}
		v.Deliveries = append(v.Deliveries, r)
	}
	return render(c, http.StatusOK, views.WebhookPage(s.page(c, "webhooks.title", "webhooks"), v))
}

// webhookPause is POST /webhooks/:id/pause: no delivery is sent until it
// is resumed; its events pile up meanwhile.
func (s *server) webhookPause(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	if _, err := s.store.PauseWebhook(c.Request().Context(), id, actor(c)); err != nil {
		return err
	}
	return redirectWithFlash(c, views.WebhookURL(id), true, flashPage(c).Tf("webhooks.flash.paused", id))
}

// webhookResume is POST /webhooks/:id/resume.
func (s *server) webhookResume(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	if _, err := s.store.ResumeWebhook(c.Request().Context(), id, actor(c)); err != nil {
		return err
	}
	return redirectWithFlash(c, views.WebhookURL(id), true, flashPage(c).Tf("webhooks.flash.resumed", id))
}

// webhookDelete is POST /webhooks/:id/delete. The form carries the
// subscription's URL typed again; any other text deletes nothing.
func (s *server) webhookDelete(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sub, err := s.store.Webhook(ctx, id)
	if err != nil {
		return err
	}
	t := flashPage(c)
	if strings.TrimSpace(c.FormValue("confirm")) != sub.URL {
		return redirectWithFlash(c, views.WebhookURL(id), false, t.T("webhooks.flash.mismatch"))
	}
	if err := s.store.DeleteWebhook(ctx, id, actor(c)); err != nil {
		return err
	}
	return redirectWithFlash(c, "/webhooks", true, t.Tf("webhooks.flash.deleted", id))
}

// webhookRedeliver is POST /webhooks/:id/deliveries/:did/redeliver: the
// delivery is made due now, for the worker to send again.
func (s *server) webhookRedeliver(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	raw := c.Param("did")
	did, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || did <= 0 {
		return invalidf("a delivery id is a positive whole number, not %q", raw)
	}
	d, err := s.store.RedeliverWebhook(c.Request().Context(), id, did, actor(c))
	t := flashPage(c)
	switch {
	case errors.Is(err, models.ErrNothingToRedeliver):
		return redirectWithFlash(c, views.WebhookURL(id), false, t.Tf("webhooks.flash.nothing", did))
	case err != nil:
		return err
	}
	return redirectWithFlash(c, views.WebhookURL(id), true, t.Tf("webhooks.flash.redeliver", did, d.EventID))
}
