package views

import (
	"regexp"
	"strconv"
	"time"
)

// The models keep why a release or a lock was refused as its English error
// text: a task's last error, an attempt's error, a late payment's note, and
// the JSON API answers with it. ErrText shows such a text in the viewer's
// language: it matches the shapes below, the refusals the models word, and
// fills the shape's catalog entry with the parts it captured (a coupon's
// id, a status and a resource type in the catalog's words, an order
// number, an amount in its unit). A text of no known shape goes to Say,
// which shows it as stored but for the failure phrases it knows.

// errPart says how a captured part of an error text is shown.
type errPart int

const (
	partRaw    errPart = iota // as stored: an id, a key, an order number
	partCode                  // a status or an op, through Page.Code
	partType                  // a resource type, through Page.Code; the shape's amounts are in its unit
	partAmount                // a quantity, in the unit of the shape's type
	partHolder                // the order a coupon or seat is held by, or "nobody"
	partReason                // a refusal's words (a models.Error's message), as its code's
	partTime                  // an RFC 3339 time, in the viewer's zone
	partErr                   // an error text of its own, which must be of a known shape too
)

// errShape is one known error text: re matches the whole text, key is the
// catalog entry whose texts are fmt formats over the captured parts, parts
// say how each is shown.
type errShape struct {
	re    *regexp.Regexp
	key   string
	parts []errPart
}

// errReasons are the words of the models' refusals of a LOCK (models.Error
// messages, models/errors.go) by their codes, which the catalog names.
var errReasons = map[string]string{
	"not enough stock":         "INSUFFICIENT_STOCK",
	"not enough balance":       "INSUFFICIENT_BALANCE",
	"not enough points":        "INSUFFICIENT_POINTS",
	"activity quota exhausted": "QUOTA_EXHAUSTED",
	"coupon cannot be used":    "COUPON_UNAVAILABLE",
	"slot already taken":       "SLOT_TAKEN",
	"resource not found":       "RESOURCE_NOT_FOUND",
}

// errShapes are the refused releases and locks the models word, each with
// the file that writes it; TestErrTextKnowsModelsErrors makes each through
// the models and checks it is matched.
var errShapes = []errShape{
	// models/coupon.go, models/slot.go: the coupon or seat is not held by
	// the order that releases it (or deducts it, on a late payment).
	{regexp.MustCompile(`^resource is not in the state the release expects: (coupon|slot) (\S+) is ([A-Z_]+), held by (\S+), not by order (\S+)$`),
		"err.state.holder", []errPart{partType, partRaw, partCode, partHolder, partRaw}},
	// models/resource.go: the order's hold row has less than the release.
	{regexp.MustCompile(`^resource is not in the state the release expects: order (\S+) does not hold (\d+) of (\S+) (\S+)$`),
		"err.state.hold", []errPart{partRaw, partAmount, partType, partRaw}},
	{regexp.MustCompile(`^resource is not in the state the release expects: resource type (\S+) is not registered: is it still in the resources file\?$`),
		"err.state.unregistered", nil},
	// models/resource_counter.go: a counter holds less than the release,
	// or has no row.
	{regexp.MustCompile(`^held amount is smaller than the release: (\S+) (\S+), order (\S+), ([A-Z_]+) (\d+)$`),
		"err.short", []errPart{partType, partRaw, partRaw, partCode, partAmount}},
	{regexp.MustCompile(`^resource row does not exist: (\S+) (\S+)$`), "err.missing", []errPart{partType}},
	// A LOCK refused: a placement's (the API's answer), or a late
	// payment's taking back what its order gave back (the order's note).
	{regexp.MustCompile(`^(not enough stock|not enough balance|not enough points|activity quota exhausted): (\S+) (\S+) has (\d+), order (\S+) asks (\d+)$`),
		"err.lock.short", []errPart{partReason, partType, partRaw, partAmount, partRaw, partAmount}},
	{regexp.MustCompile(`^(not enough balance|not enough points|resource not found): (\S+) (\S+)$`),
		"err.lock.missing", []errPart{partReason, partType}},
	{regexp.MustCompile(`^the account's points have expired: (\S+) (\S+) expired at (\S+), order (\S+) asks (\d+)$`),
		"err.lock.expired", []errPart{partType, partRaw, partTime, partRaw, partAmount}},
	{regexp.MustCompile(`^coupon cannot be used: coupon (\S+) is ([A-Z_]+), expires (\S+)$`),
		"err.lock.coupon", []errPart{partRaw, partCode, partTime}},
	{regexp.MustCompile(`^(coupon cannot be used|slot already taken): (coupon|slot) (\S+) is ([A-Z_]+)$`),
		"err.lock.taken", []errPart{partReason, partType, partRaw, partCode}},
	{regexp.MustCompile(`^coupon cannot be used: coupon (\S+) does not exist$`), "err.lock.nocoupon", nil},
	// models/order_place.go: a refused placement, as the API answers it.
	{regexp.MustCompile(`^place order (\S+): (.+)$`), "err.place", []errPart{partRaw, partErr}},
}

// ErrText shows a stored error text in the viewer's language: a known
// shape translated, anything else as Say shows it. English viewers see
// the text as stored.
func (p Page) ErrText(s string) string {
	if p.Lang == LangEN || s == "" {
		return s
	}
	if said, ok := p.errText(s); ok {
		return said
	}
	return p.Say(s)
}

// errText is s in the viewer's language when it is of a known shape.
func (p Page) errText(s string) (string, bool) {
	for _, sh := range errShapes {
		m := sh.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		// The unit the shape's amounts are in is its resource type's.
		unit := ""
		for i, kind := range sh.parts {
			if kind == partType {
				unit = m[i+1]
			}
		}
		args := make([]any, len(m)-1)
		for i, part := range m[1:] {
			kind := partRaw
			if i < len(sh.parts) {
				kind = sh.parts[i]
			}
			said, ok := p.errPart(kind, part, unit)
			if !ok {
				return "", false
			}
			args[i] = said
		}
		return p.Tf(sh.key, args...), true
	}
	return "", false
}

// errPart shows one captured part; false when an error text within is of
// no known shape, so the whole is not half translated.
func (p Page) errPart(kind errPart, part, unit string) (string, bool) {
	switch kind {
	case partCode, partType:
		return p.Code(part), true
	case partAmount:
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return part, true
		}
		return p.Amount(unit, n), true
	case partHolder:
		if part == "nobody" {
			return p.T("err.holder.nobody"), true
		}
		return p.Tf("err.holder.order", part), true
	case partReason:
		if code, ok := errReasons[part]; ok {
			return p.Code(code), true
		}
		return part, true
	case partTime:
		t, err := time.Parse(time.RFC3339, part)
		if err != nil || p.Loc == nil {
			return part, true
		}
		return p.Time(t), true
	case partErr:
		return p.errText(part)
	}
	return part, true
}
