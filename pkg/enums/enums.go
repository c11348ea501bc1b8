// Package enums names the values of the API's proto enums with the spec's
// words: a value's name without its enum's prefix, in lowercase
// (TURN_STATUS_WAITING_PERMISSION is "waiting_permission"). Event payloads,
// the spec's JSON exports and human output use the words; the API's read
// models use the enums.
package enums

import (
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Word is e's spec word: "unspecified" for the zero value, the number for
// a value this build does not know.
func Word(e protoreflect.Enum) string {
	d := e.Descriptor()
	v := d.Values().ByNumber(e.Number())
	if v == nil {
		return strconv.Itoa(int(e.Number()))
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), Prefix(d)))
}

// Parse is the value of E whose word is word; false for an empty or unknown
// word and for "unspecified".
func Parse[E interface {
	~int32
	protoreflect.Enum
}](word string) (E, bool) {
	var zero E
	if word == "" {
		return zero, false
	}
	d := zero.Descriptor()
	v := d.Values().ByName(protoreflect.Name(Prefix(d) + strings.ToUpper(word)))
	if v == nil || v.Number() == 0 {
		return zero, false
	}
	return E(v.Number()), true
}

// Prefix is the prefix buf's STANDARD lint gives the values of d: its name
// in upper snake case and "_" (TurnStatus: "TURN_STATUS_").
func Prefix(d protoreflect.EnumDescriptor) string {
	var b strings.Builder
	for i, r := range string(d.Name()) {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	b.WriteByte('_')
	return b.String()
}
