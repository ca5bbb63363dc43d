package drift

import (
	"regexp"
	"strings"
)

// texts are the texts of a definition an agent reads as prose, by place:
// the title, the description, the title hint, and every title and
// description in the input and output schemas.
func texts(d Definition, schema schemas) map[string]string {
	t := map[string]string{}
	put := func(where, s string) {
		if s != "" {
			t[where] = s
		}
	}
	put("title", d.Title)
	put("description", d.Description)
	if d.Hints != nil {
		put("hints.title", d.Hints.Title)
	}
	schema.each(func(root string, sc any) {
		walk(sc, "", 0, func(p, key string, v any) {
			if s, ok := v.(string); ok && (key == "title" || key == "description") {
				put(root+p, s)
			}
		})
	})
	return t
}

// notProse are schema keywords whose strings are identifiers or syntax, not
// text an agent reads: a URL in them is not an added link.
var notProse = map[string]bool{"$schema": true, "$id": true, "$ref": true, "$anchor": true, "$dynamicRef": true, "pattern": true, "format": true, "type": true}

// strs are the strings of a definition that reach an agent, by place: its
// texts, and every other string value in the input and output schemas
// (enum values, defaults, examples).
func strs(d Definition, schema schemas) map[string]string {
	s := texts(d, schema)
	schema.each(func(root string, sc any) {
		walk(sc, "", 0, func(p, key string, v any) {
			if str, ok := v.(string); ok && !notProse[key] && str != "" {
				s[root+p] = str
			}
		})
	})
	return s
}

// walk calls fn for every value below v with its JSON pointer and the key
// (or "" for an array element) it is under; it stops at maxDepth.
func walk(v any, p string, depth int, fn func(p, key string, v any)) {
	if depth > maxDepth {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			cp := pointer(p, k)
			fn(cp, k, c)
			walk(c, cp, depth+1, fn)
		}
	case []any:
		for i, c := range x {
			cp := pointer(p, itoa(i))
			fn(cp, "", c)
			walk(c, cp, depth+1, fn)
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}

// hidden reports the hidden characters anywhere in a definition: its
// texts, the keys and string values of its input and output schemas, and
// its name; and the places the import removed control characters from.
func hidden(f *findings, d Definition, schema schemas) {
	for _, where := range d.Removed {
		f.add(HiddenCharacters, where, "control characters removed at import")
	}
	check := func(where, s string) {
		for _, r := range s {
			if k := Hidden(r); k != "" {
				f.add(HiddenCharacters, where, k)
			}
		}
	}
	check("name", d.Name)
	for where, s := range texts(d, schemas{}) {
		check(where, s)
	}
	schema.each(func(root string, sc any) {
		walk(sc, "", 0, func(p, key string, v any) {
			check(root+p, key)
			if s, ok := v.(string); ok {
				check(root+p, s)
			}
		})
	})
}

// visible is s without its hidden characters, so that a phrase split by
// one is still found.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if Hidden(r) != "" {
			return -1
		}
		return r
	}, s)
}

// instructionLike are phrases that address the model reading a tool's text
// rather than describe the tool: overriding other instructions, demanding
// steps, keeping things from the user, pseudo-markup that imitates a
// system prompt, and sending data elsewhere. They are a heuristic: they
// point a reviewer at text, and decide nothing. They match text made
// lower case with its white space runs made one space (plain), which keeps
// the expression small and fast.
var instructionLike = regexp.MustCompile(strings.Join([]string{
	`\b(ignore|disregard|forget|override) (all |any )?(the |your )?(previous|prior|above|earlier|other|system) (instructions?|prompts?|rules?|messages?)`,
	`\byou (must|should|have to|need to) (always|never|first|also|now)\b`,
	`\b(do not|don'?t|never) (tell|mention|inform|reveal|show|notify)\b`,
	`\bwithout (telling|informing|asking|notifying)\b`,
	`</? ?(important|system|instructions?|secret|hidden|admin) ?>`,
	`\bsystem prompt\b`,
	`\bbefore (using|calling|invoking) (this|any|the)\b`,
	`\b(always|first) (call|invoke|run|use)\b`,
	`\b(send|forward|upload|post|exfiltrate|copy) (it|them|this|that|everything|all|the [a-z0-9_]+) to\b`,
	`\b(read|include|attach) (the )?(contents? of )?(~/|/etc/|\.ssh|\.env\b|id_rsa|credentials|api keys?|tokens?|passwords?)`,
}, "|"))

// urlLike finds links in plain text: a scheme followed by something, or a
// bare www. host.
var urlLike = regexp.MustCompile(`\b([a-z][a-z0-9+.-]{1,15}://[^\s"'<>]+|(javascript|data|file|mailto):[^\s"'<>]+|www\.[a-z0-9-]+\.[^\s"'<>]+)`)

// plain is s as the phrase expressions read it: without hidden characters
// (so that a phrase split by one is still found), in lower case, with every
// run of white space one space.
func plain(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(visible(s))), " ")
}

// instructions reports instruction-like phrases and URLs that a place's
// string has and its string in prev did not have (prev nil: a first
// import, where every one is reported).
func instructions(f *findings, prev, next map[string]string) {
	for where, s := range next {
		old := plain(prev[where])
		s = plain(s)
		if added(instructionLike, old, s) {
			f.add(InstructionsAdded, where, "instruction-like text added")
		}
		if added(urlLike, old, s) {
			f.add(InstructionsAdded, where, "URL added")
		}
	}
}

// added reports whether s has a match of re that old does not have.
func added(re *regexp.Regexp, old, s string) bool {
	found := re.FindAllString(s, 64)
	if len(found) == 0 {
		return false
	}
	had := map[string]bool{}
	for _, m := range re.FindAllString(old, 64) {
		had[m] = true
	}
	for _, m := range found {
		if !had[m] {
			return true
		}
	}
	return false
}
