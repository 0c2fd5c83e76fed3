package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"unhold/models"
)

// Bounds of a retry policy. A step over a day or more tries than this is
// a typo more likely than a wish; a policy is read at every start.
const (
	maxRetrySteps = 20
	maxRetryStep  = 24 * time.Hour
	maxRetryTries = 1000
)

// retryKeys are the keys a retry entry may have.
var retryKeys = []string{"type", "class", "steps", "tries"}

// anyName is how a retry entry names every type or every class.
const anyName = "*"

// retryDefault reads -retry-steps and -retry-tries: the policy of every
// type and class the resources file's retry: list does not name.
func retryDefault(steps, tries *setting) (models.RetryPolicy, error) {
	var p models.RetryPolicy
	var ds []time.Duration
	for part := range strings.SplitSeq(steps.value, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return p, steps.errorf(stepsShape)
		}
		ds = append(ds, d)
	}
	if msg := checkSteps(ds); msg != "" {
		return p, steps.errorf(stepsShape + ": " + msg)
	}
	n, err := intIn(tries, 1, maxRetryTries)
	if err != nil {
		return p, err
	}
	return models.RetryPolicy{Steps: ds, Tries: n}, nil
}

// stepsShape says what steps are, in errors.
var stepsShape = fmt.Sprintf("1 to %d waits, each more than 0 and at most %s, in order, like 1s,5s,30s,5m,30m",
	maxRetrySteps, maxRetryStep)

// checkSteps says what is wrong with a policy's steps, or "".
func checkSteps(ds []time.Duration) string {
	if len(ds) == 0 || len(ds) > maxRetrySteps {
		return fmt.Sprintf("%d waits", len(ds))
	}
	for i, d := range ds {
		switch {
		case d <= 0:
			return fmt.Sprintf("wait %d (%s) is not more than 0", i+1, d)
		case d > maxRetryStep:
			return fmt.Sprintf("wait %d (%s) is over %s", i+1, d, maxRetryStep)
		case i > 0 && d < ds[i-1]:
			return fmt.Sprintf("wait %d (%s) is shorter than the one before (%s)", i+1, d, ds[i-1])
		}
	}
	return ""
}

// parseRetry reads the retry: list of a resources file's contents (name
// as the user gave it): the policies of a type, a class or both, each
// field an entry leaves out taken from def. types are the built-in and
// declared types a policy may name. Every problem is one line naming the
// file, the entry (its index, type and class) and the key.
func parseRetry(name string, data []byte, types []models.ResourceType, def models.RetryPolicy) ([]models.RetryPolicy, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		// parseResources has said what is wrong with the file.
		return nil, nil
	}
	root := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "retry" {
			if list != nil {
				return nil, fmt.Errorf("%s: retry: given twice", name)
			}
			list = root.Content[i+1]
		}
	}
	if list == nil || (list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null") {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: retry: must be a list of policies, each with %s", name, retryShape)
	}
	var out []models.RetryPolicy
	var errs []error
	first := map[string]int{}
	for i, entry := range list.Content {
		p, entryErrs := parseRetryEntry(entry, types, def)
		where := fmt.Sprintf("retry[%d]", i)
		if t, c := entryText(entry, "type"), entryText(entry, "class"); t != "" || c != "" {
			where += fmt.Sprintf(" (%s/%s)", t, c)
		}
		if len(entryErrs) == 0 {
			if j, seen := first[p.Name()]; seen {
				entryErrs.add("", "a policy of %s is given again; first at retry[%d]", p.Name(), j)
			} else {
				first[p.Name()] = i
			}
		}
		for _, e := range entryErrs {
			if e.field == "" {
				errs = append(errs, fmt.Errorf("%s: %s: %s", name, where, e.msg))
			} else {
				errs = append(errs, fmt.Errorf("%s: %s: %s: %s", name, where, e.field, e.msg))
			}
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// retryShape says what a retry entry holds, in errors.
const retryShape = "type (a resource type or *), class (an error class or *), and steps, tries or both"

// entryText is one key's text as written, "" when absent or not text; to
// name the entry in errors.
func entryText(entry *yaml.Node, k string) string {
	if entry.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(entry.Content); i += 2 {
		if entry.Content[i].Value == k {
			v, _ := scalar(entry.Content[i+1])
			if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }) {
				return strconv.Quote(v)
			}
			return v
		}
	}
	return ""
}

// parseRetryEntry reads one retry policy and its problems.
func parseRetryEntry(entry *yaml.Node, types []models.ResourceType, def models.RetryPolicy) (models.RetryPolicy, fieldErrors) {
	p := models.RetryPolicy{Steps: def.Steps, Tries: def.Tries}
	var errs fieldErrors
	bad := errs.add
	fields, ok := mappingFields(entry, retryKeys, "a policy", retryShape, bad)
	if !ok {
		return p, errs
	}

	switch t, ok := field(fields, "type"); {
	case !ok || t == "":
		bad("type", "required: a built-in or declared resource type, or * for any")
	case t == anyName:
	case !slices.Contains(types, models.ResourceType(t)):
		bad("type", "%s is neither a built-in type nor one this file declares", t)
	default:
		p.Type = models.ResourceType(t)
	}

	c, ok := field(fields, "class")
	switch cl := models.ErrorClass(c); {
	case !ok || c == "":
		bad("class", "required: an error class, or * for any")
	case c == anyName:
	case cl == models.ClassRetryExhausted:
		bad("class", "%s is what a task becomes when its tries run out, not a failure's class", c)
	case !slices.Contains(models.ErrorClasses, cl):
		bad("class", "%s is not an error class; one of %s", c, retryClasses())
	default:
		p.Class = cl
	}
	if entryText(entry, "type") == anyName && c == anyName {
		bad("", "the default policy of any type and class is set by -retry-steps and -retry-tries "+
			"(UNHOLD_RETRY_STEPS, UNHOLD_RETRY_TRIES), not here")
	}

	_, hasSteps := fields["steps"]
	_, hasTries := fields["tries"]
	if !hasSteps && !hasTries {
		bad("", "gives neither steps nor tries")
	}
	if hasSteps {
		if ds, msg := durations(fields["steps"]); msg != "" {
			bad("steps", "%s; steps are %s", msg, stepsShape)
		} else {
			p.Steps = ds
		}
	}
	if hasTries {
		n, err := strconv.Atoi(fields["tries"].Value)
		if fields["tries"].Kind != yaml.ScalarNode || fields["tries"].ShortTag() != "!!int" || err != nil ||
			n < 1 || n > maxRetryTries {
			bad("tries", "must be a whole number from 1 to %d, the failures in a row that send a task to MANUAL", maxRetryTries)
		} else {
			p.Tries = n
		}
	}
	if p.Class.Permanent() && p.Tries != 1 {
		bad("tries", "%s is permanent: a task goes MANUAL at its first such failure whatever a policy says, so tries can only be 1",
			p.Class)
	}
	return p, errs
}

// durations reads steps: a list of waits like [1s, 5s]; msg says what is
// wrong with it.
func durations(n *yaml.Node) (ds []time.Duration, msg string) {
	if n.Kind != yaml.SequenceNode {
		return nil, "must be a list like [1s, 5s, 30s]"
	}
	for i, item := range n.Content {
		v, ok := scalar(item)
		d, err := time.ParseDuration(v)
		if !ok || err != nil {
			return nil, fmt.Sprintf("wait %d (%q) is not a duration like 30s or 5m", i+1, v)
		}
		ds = append(ds, d)
	}
	return ds, checkSteps(ds)
}

// retryClasses lists the classes a policy may name, in errors.
func retryClasses() string {
	var cs []string
	for _, c := range models.ErrorClasses {
		if c != models.ClassRetryExhausted {
			cs = append(cs, string(c))
		}
	}
	return strings.Join(cs, ", ")
}
