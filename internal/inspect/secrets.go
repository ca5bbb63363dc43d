package inspect

import "strings"

// tokenChar reports the characters of the credentials recognised: ASCII
// letters and digits, '_' and '-'.
func tokenChar(b byte) bool {
	c := class[b]
	return c == cLetter || c == cDigit || b == '_' || b == '-'
}

// tokenEnd is the end of the run of token characters from i.
func tokenEnd(text string, i int) int {
	for i < len(text) && tokenChar(text[i]) {
		i++
	}
	return i
}

// secretStart reports whether a word starting with a and b may be a
// credential secretAt recognises.
func secretStart(a, b byte) bool {
	switch uint16(a)<<8 | uint16(b) {
	case 'g'<<8 | 'h', 'g'<<8 | 'i', 'g'<<8 | 'l', 'x'<<8 | 'o', 'A'<<8 | 'K', 'A'<<8 | 'S', 'A'<<8 | 'I',
		's'<<8 | 'k', 'r'<<8 | 'k', 'e'<<8 | 'y':
		return true
	}
	return false
}

// secretAt recognises a credential starting at i, the start of a word: the
// end of it and its format, or 0 when there is none. Each format is a
// prefix its issuer puts on every credential of that kind and a body long
// enough that prose does not match it.
func secretAt(text string, i int) (int, string) {
	rest := text[i:]
	if len(rest) < 20 {
		return 0, ""
	}
	switch rest[0] {
	case 'g':
		switch {
		case len(rest) > 4 && rest[:2] == "gh" && strings.IndexByte("pousr", rest[2]) >= 0 && rest[3] == '_':
			return body(text, i, 4, 30, SecretGitHubToken)
		case strings.HasPrefix(rest, "github_pat_"):
			return body(text, i, len("github_pat_"), 22, SecretGitHubToken)
		case strings.HasPrefix(rest, "glpat-"):
			return body(text, i, len("glpat-"), 20, SecretGitLabToken)
		}
	case 'x':
		if rest[:3] == "xox" && strings.IndexByte("abprs", rest[3]) >= 0 && rest[4] == '-' {
			return body(text, i, 5, 10, SecretSlackToken)
		}
	case 'A':
		switch rest[:4] {
		case "AKIA", "ASIA":
			return awsKeyAt(text, i)
		case "AIza":
			return body(text, i, 4, 30, SecretGoogleAPIKey)
		}
	case 's', 'r':
		switch {
		case rest[:3] == "sk-":
			return body(text, i, 3, 20, SecretAPIKey)
		case rest[1:3] == "k_" && (strings.HasPrefix(rest[3:], "live_") || strings.HasPrefix(rest[3:], "test_")):
			return body(text, i, 8, 16, SecretStripeKey)
		}
	case 'e':
		if rest[:3] == "eyJ" {
			return jwtAt(text, i)
		}
	}
	return 0, ""
}

// body is the end of a credential of prefix length prefix at i whose body
// of token characters is at least min long, or 0.
func body(text string, i, prefix, min int, detail string) (int, string) {
	end := tokenEnd(text, i+prefix)
	if end-(i+prefix) < min {
		return 0, ""
	}
	return end, detail
}

// awsKeyAt recognises an AWS access key id: AKIA or ASIA and 16 upper case
// letters or digits, a token of exactly 20 characters.
func awsKeyAt(text string, i int) (int, string) {
	end := tokenEnd(text, i)
	if end-i != 20 {
		return 0, ""
	}
	for j := i + 4; j < end; j++ {
		if b := text[j]; !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9') {
			return 0, ""
		}
	}
	return end, SecretAWSAccessKey
}

// jwtAt recognises a JWT: three base64url parts joined by dots, the first
// a JSON object's encoding.
func jwtAt(text string, i int) (int, string) {
	end := i
	for part := 0; part < 3; part++ {
		start := end
		end = tokenEnd(text, start)
		if end-start < 10 {
			return 0, ""
		}
		if part < 2 {
			if end >= len(text) || text[end] != '.' {
				return 0, ""
			}
			end++
		}
	}
	return end, SecretJWT
}

// privateKeyAt recognises a PEM private key block at i: from its BEGIN
// line to the end of its END line, or to the end of the text when it has
// none (a key cut short is still a key).
func privateKeyAt(text string, i int) int {
	const begin = "-----BEGIN "
	rest := text[i:]
	if !strings.HasPrefix(rest, begin) {
		return 0
	}
	line := rest[len(begin):]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if len(line) > 64 || !strings.HasSuffix(strings.TrimRight(line, "\r"), "PRIVATE KEY-----") {
		return 0
	}
	const end = "-----END "
	k := strings.Index(rest[len(begin):], end)
	if k < 0 {
		return len(text)
	}
	after := i + len(begin) + k + len(end)
	if nl := strings.IndexByte(text[after:], '\n'); nl >= 0 {
		return after + nl
	}
	return len(text)
}
