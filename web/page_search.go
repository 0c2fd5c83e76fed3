package web

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// search is GET /search?q=: the header's box. A query that is not a key
// (1-64 letters, digits or -_.:) is refused with a 400 page before anything
// is read. One exact match — the only hit whose key is the query, whatever
// its case — or a single hit in all opens its page with a 303; anything
// else lists the hits, grouped by kind.
func (s *server) search(c *echo.Context) error {
	p := s.page(c, "search.title", "")
	q := trimPastedInput(c.QueryParam("q"))
	v := views.SearchView{Query: q, Limit: models.SearchLimit}
	if q == "" {
		return render(c, http.StatusOK, views.SearchPage(p, v))
	}
	if !models.ValidKey(q) {
		v.Bad = true
		return render(c, http.StatusBadRequest, views.SearchPage(p, v))
	}
	res, err := s.store.Search(c.Request().Context(), q, models.SearchLimit)
	if err != nil {
		return err
	}
	v.Searched = true
	var exact, all []views.SearchRow
	for _, g := range res.Groups {
		vg := views.SearchGroup{Kind: string(g.Kind), Type: string(g.Type), More: g.More}
		for _, h := range g.Hits {
			r := s.searchRow(g, h)
			vg.Rows = append(vg.Rows, r)
			all = append(all, r)
			if h.Exact {
				exact = append(exact, r)
			}
		}
		v.Groups = append(v.Groups, vg)
	}
	if len(exact) == 1 && exact[0].URL != "" {
		return c.Redirect(http.StatusSeeOther, exact[0].URL)
	}
	if len(exact) == 0 && len(all) == 1 && all[0].URL != "" {
		return c.Redirect(http.StatusSeeOther, all[0].URL)
	}
	return render(c, http.StatusOK, views.SearchPage(p, v))
}

// searchRow maps one hit to its row: its page, and the user, order or
// resource it names; an order's frozen amounts, a user's last order and
// balances.
func (s *server) searchRow(g models.SearchGroup, h models.SearchHit) views.SearchRow {
	r := views.SearchRow{Key: h.Key, Status: h.Status, Owner: h.Owner, Frozen: views.SearchFrozen(h.Frozen)}
	orderURL := func(no string) string { return "/orders/" + url.PathEscape(no) }
	userURL := views.UserURL // a user links to their page: orders and accounts
	link := func(label, code, text, to string) {
		if text != "" {
			r.Links = append(r.Links, views.SearchLink{Label: label, Code: code, Text: text, URL: to})
		}
	}
	counter := func() {
		r.Counter, r.Available, r.Locked, r.Spent = true, h.Available, h.Locked, h.Spent
	}
	switch g.Kind {
	case models.SearchOrder:
		r.URL = orderURL(h.Key)
		link("search.user", "", h.UserID, userURL(h.UserID))
	case models.SearchUser:
		r.URL = userURL(h.Key)
		if o := h.LastOrder; o != nil {
			r.Last = &views.SearchLastOrder{No: o.No, URL: orderURL(o.No), Status: string(o.Status), Created: o.CreatedAt,
				Frozen: views.SearchFrozen(o.Frozen)}
		}
		if h.Account {
			r.AccountURL = views.Query("/balances", "user", h.Key)
		}
	case models.SearchCoupon:
		r.URL = s.store.KeyPage(models.ResCoupon, h.Key)
		link("search.user", "", h.UserID, userURL(h.UserID))
		if h.OrderNo != "" {
			link("search.order", "", h.OrderNo, orderURL(h.OrderNo))
		}
	case models.SearchTask:
		r.URL = "/tasks/" + h.Key
		link("search.order", "", h.OrderNo, orderURL(h.OrderNo))
		link("search.resource", string(h.Type), h.BizKey, s.store.KeyPage(h.Type, h.BizKey))
	case models.SearchSKU:
		r.URL = s.store.KeyPage(models.ResInventory, h.Key)
		counter()
	case models.SearchActivity:
		r.URL = s.store.KeyPage(models.ResQuota, h.Key)
		counter()
	case models.SearchSlot:
		r.URL = s.store.KeyPage(models.ResSlot, h.Key)
		if h.OrderNo != "" {
			link("search.order", "", h.OrderNo, orderURL(h.OrderNo))
		}
	case models.SearchDeclared:
		r.URL = s.store.KeyPage(g.Type, h.Key)
		counter()
	}
	return r
}
