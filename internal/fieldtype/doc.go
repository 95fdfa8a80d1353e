// Package fieldtype owns template field types: which types exist, which
// options each type takes, and how a value string is validated and brought to
// its one canonical form. Template creation, act data writes, the built-in
// providers and the reference integration all go through this package, so
// that a value accepted in one place is accepted (and spelled) the same way in
// every other.
//
// # API in one paragraph
//
// [ValidateOptions] checks a field's options when a template is created.
// [Normalize] checks a value against a field's type and options and returns
// the canonical string to store; a value error is a [*ValueError]. [Effective]
// returns the options with defaults filled in (the shape put into data-point
// snapshots and event payloads). [Example] returns a valid sample value.
// Normalize, Effective and Example expect options that ValidateOptions
// accepted; given invalid options, Normalize returns an [*OptionsError],
// Effective returns nil and Example returns "".
//
// # Why canonical forms
//
// The correlated-result rules compare values: re-sending an identical
// accepted value is idempotent, a different one is a conflict. "Identical"
// must not depend on how an integration happened to spell a number, so
// every accepted value is stored in canonical form and compared in that form.
// Normalize is idempotent: if Normalize(v) returns c, then Normalize(c)
// returns c.
//
// # Values by type
//
// A value is always a string. "No value" is the caller's null, never "": the
// empty string is a valid text value and invalid for every other type.
// Nothing is trimmed: surrounding white space makes a value invalid (text
// keeps it as written).
//
//   - text: valid UTF-8; no control characters other than tab, line feed and
//     carriage return (NUL cannot be stored in PostgreSQL text, and the others
//     are almost always encoding debris); at most max_length characters,
//     counted in Unicode code points (default and ceiling [MaxTextLength]).
//     Canonical form: unchanged.
//   - number: an exact decimal, never a float64. Grammar -?[0-9]+(\.[0-9]+)?:
//     no leading '+', no exponent, no NaN/Inf, no '.5' or '5.', no spaces or
//     separators. At most [MaxIntegerDigits] digits before the point once
//     leading zeros are dropped, at most [MaxDecimals] significant digits
//     after it, and at most 100 characters in all (so that padding with
//     zeros cannot make a value arbitrarily long). With options.decimals = d, a value may have at most d
//     significant fractional digits: extra non-zero digits make it invalid
//     rather than rounded, because silently rounding money is a bug; extra
//     trailing zeros ("1.500" for d=2) are accepted since they lose nothing.
//     options.min and options.max are inclusive and compared exactly.
//     Canonical form: no leading zeros, no "-0"; with decimals set, exactly d
//     fractional digits ("1.5" → "1.50"); without, trailing fractional zeros
//     and a bare point removed ("1.50" → "1.5", "2.0" → "2").
//   - integer: -?[0-9]+ in base 10, within the int64 range, at most 100
//     characters. "1.0", "+1", "1e3" and "0x10" are invalid. Canonical form: no leading zeros, no "-0".
//   - currency: an amount, with the number grammar and limits. options.currency
//     (required) is an active ISO 4217 code; options.decimals defaults to the
//     code's ISO 4217 minor unit (2 for EUR, 0 for JPY, 3 for KWD) and may be
//     set to anything in 0..[MaxDecimals]. Negative amounts are allowed
//     (refunds, losses). Canonical form as for number with decimals set.
//   - percentage: a decimal with the number grammar and limits, written in
//     percent ("12.5" means 12.5 %, not 0.125). No range is enforced: growth of
//     105.5 % or a change of -30 % are legitimate. Canonical form as for number
//     without decimals.
//   - boolean: exactly "true" or "false", lower case. Other spellings ("TRUE",
//     "1", "yes") are rejected rather than guessed.
//   - date: a calendar date YYYY-MM-DD from 0001-01-01 to 9999-12-31 that
//     exists ("2023-02-29" is invalid). Canonical form: unchanged.
//   - select: exactly one of options.choices, compared byte for byte (case
//     and white space matter). Canonical form: unchanged.
//   - table: the serialized JSON array of row objects described below.
//
// # Tables
//
// options.columns lists the columns as {key, name, type, options}. A column's
// type is any type except table, and its options follow that type's rules.
//
// The value is a JSON array (at most [MaxTableRows] rows) of JSON objects:
//
//   - A key that is not a column key is invalid, and so is a key that appears
//     twice in one row (encoding/json would silently keep the last one).
//   - A missing key and a JSON null both mean "empty cell"; both are allowed.
//     Any non-empty cell must be valid for its column.
//   - A cell is a JSON string holding the value in the column type's format.
//     For number, integer, currency and percentage columns a JSON number is
//     accepted too, read from its literal text (never through float64), so
//     1e3 is as invalid as "1e3". For boolean columns a JSON true/false is
//     accepted too. For text columns "" is a value; for other columns use null.
//   - Objects and arrays are not cell values.
//
// Canonical form: compact JSON without insignificant white space; every row
// has every column key, in column order; empty cells are null; every other
// cell is a JSON string holding the cell's canonical value. Strings are
// escaped minimally (quote, backslash, control characters, and U+2028/U+2029
// for the sake of JavaScript consumers), never HTML-escaped. The input must be
// valid UTF-8 and at most [MaxTableBytes] bytes, and so must the canonical
// form; the second limit keeps Normalize idempotent, since filling in nulls
// can make a value longer.
//
// # Options
//
// [Options] is one JSON object (FieldOptions in the OpenAPI document) whose
// properties are all optional; each type allows only the properties listed
// here and rejects any other that is present:
//
//	text        max_length (1..MaxTextLength)
//	number      decimals (0..MaxDecimals), min, max
//	integer     none
//	currency    currency (required), decimals (0..MaxDecimals)
//	percentage  decimals (0..MaxDecimals)
//	boolean     none
//	date        none
//	select      choices (required)
//	table       columns (required)
//
// min and max are decimal strings; JSON numbers are accepted when decoding and
// kept as their literal text. They must satisfy the value rules of the field
// (including decimals, so that the bounds themselves are valid values and the
// range is never empty) and min ≤ max. choices holds 1..[MaxChoices] distinct
// strings of 1..[MaxChoiceLength] characters, without surrounding white
// space or control characters. columns holds 1..[MaxColumns] columns with
// distinct keys matching ^[a-z][a-z0-9_]{0,62}$ and names of
// 1..[MaxNameLength] characters.
package fieldtype
