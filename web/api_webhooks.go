package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// Webhook subscriptions over the API, admin only (docs/webhooks.md).

// createWebhookBody is a subscription to make: the URL, the event types
// (none: every type) and the secret (absent: one is made).
type createWebhookBody struct {
	URL    string   `json:"url"`
	Types  []string `json:"types,omitempty"`
	Secret string   `json:"secret,omitempty"`
}

// createdWebhookView is a new subscription with its secret, the only time
// the secret is shown.
type createdWebhookView struct {
	models.WebhookSubscription
	Secret string `json:"secret"`
}

// noBody is the body of a webhook action that takes none: absent, or {}.
type noBody struct{}

// webhookAction reads the :id of a webhook action and its body, which
// must be empty or {}.
func webhookAction(c *echo.Context) (int64, error) {
	id, err := webhookIDParam(c)
	if err != nil {
		return 0, err
	}
	return id, readJSON(c, &noBody{}, false)
}

type webhooksView struct {
	Webhooks []models.WebhookSubscription `json:"webhooks"`
}

// webhookIDParam reads the :id of a webhook route.
func webhookIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a webhook id is a positive whole number, not %.32q", raw)
	}
	return id, nil
}

// apiCreateWebhook is POST /api/v1/webhooks: 201 with the subscription
// and its secret, shown this once.
func (s *server) apiCreateWebhook(c *echo.Context) error {
	var body createWebhookBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	types, err := models.ParseEventTypes(strings.Join(body.Types, ","))
	if err != nil {
		return err
	}
	w, secret, err := s.store.CreateWebhook(c.Request().Context(), models.NewWebhook{URL: body.URL, Types: types, Secret: body.Secret}, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, createdWebhookView{WebhookSubscription: w, Secret: secret})
}

// apiWebhooks is GET /api/v1/webhooks: every subscription, oldest first,
// with its backlog; never a secret.
func (s *server) apiWebhooks(c *echo.Context) error {
	list, err := s.store.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhooksView{Webhooks: list})
}

// apiWebhook is GET /api/v1/webhooks/:id.
func (s *server) apiWebhook(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	w, err := s.store.Webhook(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// apiDeleteWebhook is DELETE /api/v1/webhooks/:id: 204; its deliveries go
// with it.
func (s *server) apiDeleteWebhook(c *echo.Context) error {
	id, err := webhookAction(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteWebhook(c.Request().Context(), id, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiPauseWebhook is POST /api/v1/webhooks/:id/pause and apiResumeWebhook
// .../resume: 200 with the subscription as it is now; either is harmless
// when it already is so.
func (s *server) apiPauseWebhook(c *echo.Context) error {
	id, err := webhookAction(c)
	if err != nil {
		return err
	}
	w, err := s.store.PauseWebhook(c.Request().Context(), id, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

func (s *server) apiResumeWebhook(c *echo.Context) error {
	id, err := webhookAction(c)
	if err != nil {
		return err
	}
	w, err := s.store.ResumeWebhook(c.Request().Context(), id, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// apiWebhookDeliveries is GET /api/v1/webhooks/:id/deliveries[?status=
// &before=&limit=]: newest first, one keyset page at a time (next is the
// before of the next page).
func (s *server) apiWebhookDeliveries(c *echo.Context) error {
	id, err := webhookIDParam(c)
	if err != nil {
		return err
	}
	var f models.DeliveryFilter
	for k, vs := range c.Request().URL.Query() {
		v := vs[0]
		switch k {
		case "status":
			if f.Status, err = models.ParseDeliveryStatus(v); err != nil {
				return err
			}
		case "before":
			if f.Before, err = strconv.ParseInt(v, 10, 64); err != nil || f.Before <= 0 {
				return invalidf("before is a delivery id, a positive whole number, not %.32q", v)
			}
		case "limit":
			if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit <= 0 {
				return invalidf("limit must be from 1 to 500, not %.32q", v)
			}
		default:
			return invalidf("unknown query parameter %.32q: status, before and limit are taken", k)
		}
	}
	page, err := s.store.WebhookDeliveries(c.Request().Context(), id, f)
	if err != nil {
		return err
	}
	if page.Deliveries == nil {
		page.Deliveries = []models.WebhookDelivery{}
	}
	return c.JSON(http.StatusOK, page)
}

// apiRedeliver is POST /api/v1/webhooks/:id/deliveries/:did/redeliver:
// 200 with the delivery, due now; 409 NOTHING_TO_REDELIVER when it waits
// or is being sent already.
func (s *server) apiRedeliver(c *echo.Context) error {
	id, err := webhookAction(c)
	if err != nil {
		return err
	}
	raw := c.Param("did")
	did, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || did <= 0 {
		return invalidf("a delivery id is a positive whole number, not %.32q", raw)
	}
	d, err := s.store.RedeliverWebhook(c.Request().Context(), id, did, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
