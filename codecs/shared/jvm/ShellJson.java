package cdcreplay.codecs;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.regex.Pattern;

/**
 * MongoDB shell-mode JSON documents as Huawei DRS writes them (the Java driver's {@code {"_id": ObjectId("..."),
 * "qty": NumberLong(5)}}), in the document model the Mongo formats share ({@code shared/bson_values.py}): each
 * top-level field as canonical text typed by its BSON type, as {@code drs_mongo.typed} reads it.
 *
 * <p>Only the one spelling the codec's encoder writes back is read: the driver's spacing ({@code ", "} and
 * {@code ": "}) and, for each top-level value, the form {@code drs_mongo.render_typed} gives its type. A document
 * so written is derived again as it is, so the codec keeps no fix of it. Any other spelling, and every value the
 * codec keeps as written (regular expressions, MinKey, other constructors) or names as an error, declines, and
 * the codec decodes the message.
 */
final class ShellJson {
    private ShellJson() {}

    private static final JsonFactory STRINGS = JsonChecks.factory();  // a string literal's escapes, read leniently

    // bson_values.NUMBER and INT, ASCII digits only (Python's \d also takes other scripts' digits: those decline)
    private static final Pattern NUMBER = Pattern.compile("-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?");
    private static final Pattern INT = Pattern.compile("-?[0-9]+");
    // decimals is_decimal takes and json.dumps writes as they are
    private static final Pattern DECIMAL = Pattern.compile("-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");
    private static final Pattern SUBTYPE = Pattern.compile("0|[1-9][0-9]{0,2}");
    // render_date's ISODate text: years 1..9999, milliseconds, UTC
    private static final Pattern ISO_MILLIS = Pattern.compile(
            "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z");
    private static final int MAX_DEPTH = 64;  // deeper nesting: the codec's reader decides

    /** A document's top-level fields, in order; declines text that is not one document in the encoder's spelling,
     *  or that names a field twice. */
    static LinkedHashMap<String, ExtendedJson.Typed> document(String text) {
        Reader r = new Reader(text);
        LinkedHashMap<String, ExtendedJson.Typed> fields = r.document();
        r.end();
        return fields;
    }

    /** An update's operators as the encoder writes them: {@code {"$set": {<fields>}}}, {@code {"$unset": {<field>:
     *  <argument>}}}, or both, in either order. */
    static final class Update {
        final List<String> operators = new ArrayList<>(2);
        final LinkedHashMap<String, ExtendedJson.Typed> set = new LinkedHashMap<>();
        final LinkedHashMap<String, String> unset = new LinkedHashMap<>();  // field -> its argument, compact
    }

    /** An update's text; declines another operator (the codec's error), one named twice, and other spellings. */
    static Update update(String text) {
        Reader r = new Reader(text);
        Update u = new Update();
        r.expect("{");
        while (true) {
            String operator = r.string();
            r.expect(": ");
            if (u.operators.contains(operator)) throw JsonChecks.DECLINE;
            u.operators.add(operator);
            if (operator.equals("$set")) {
                u.set.putAll(r.document());
            } else if (operator.equals("$unset")) {
                r.arguments(u.unset);
            } else {
                throw JsonChecks.DECLINE;  // $v, $inc...: the codec keeps or names them
            }
            if (r.peek() == '}') break;
            r.expect(", ");
        }
        r.expect("}");
        r.end();
        return u;
    }

    private static final class Reader {
        private final String s;
        private int i;

        Reader(String s) {
            this.s = s;
        }

        void expect(String text) {
            if (!s.startsWith(text, i)) throw JsonChecks.DECLINE;
            i += text.length();
        }

        void end() {
            if (i != s.length()) throw JsonChecks.DECLINE;
        }

        char peek() {
            if (i >= s.length()) throw JsonChecks.DECLINE;
            return s.charAt(i);
        }

        /** {"name": value, ...}: the render_document form. */
        LinkedHashMap<String, ExtendedJson.Typed> document() {
            expect("{");
            LinkedHashMap<String, ExtendedJson.Typed> fields = new LinkedHashMap<>();
            if (peek() == '}') {
                i++;
                return fields;
            }
            while (true) {
                String name = string();
                expect(": ");
                if (fields.put(name, value()) != null) throw JsonChecks.DECLINE;  // the codec keeps the last
                if (peek() == '}') {
                    i++;
                    return fields;
                }
                expect(", ");
            }
        }

        /** {"field": argument, ...}: each argument's compact text (Node.compact) put into {@code into}. */
        void arguments(LinkedHashMap<String, String> into) {
            expect("{");
            if (peek() == '}') {
                i++;
                return;
            }
            while (true) {
                String name = string();
                expect(": ");
                StringBuilder compact = new StringBuilder();
                nested(compact, 0);
                if (into.put(name, compact.toString()) != null) throw JsonChecks.DECLINE;
                if (peek() == '}') {
                    i++;
                    return;
                }
                expect(", ");
            }
        }

        /** A top-level value in the one form render_typed writes for its type. */
        private ExtendedJson.Typed value() {
            char c = peek();
            if (c == '"') return new ExtendedJson.Typed("string", string(), false);
            if (c == '{' || c == '[') {
                StringBuilder compact = new StringBuilder();
                nested(compact, 0);
                return new ExtendedJson.Typed(c == '{' ? "object" : "array", compact.toString(), false);
            }
            if (c == '-' || c >= '0' && c <= '9') {
                String t = number();
                if (!INT.matcher(t).matches()) return new ExtendedJson.Typed("double", t, true);
                return new ExtendedJson.Typed(int32(t) ? "int32" : "int64", t, true);
            }
            if (word("null")) return new ExtendedJson.Typed("null", null, false);
            if (word("true")) return new ExtendedJson.Typed("bool", "true", false);
            if (word("false")) return new ExtendedJson.Typed("bool", "false", false);
            if (s.startsWith("ObjectId(\"", i)) {
                String hex = quotedArgument("ObjectId(");
                if (!ExtendedJson.HEX24.matcher(hex).matches()) throw JsonChecks.DECLINE;
                return new ExtendedJson.Typed("objectId", hex, false);
            }
            if (s.startsWith("NumberLong(\"", i)) {  // beyond int32: quoted
                String digits = quotedArgument("NumberLong(");
                if (!INT.matcher(digits).matches() || int32(digits)) throw JsonChecks.DECLINE;
                return new ExtendedJson.Typed("int64", digits, false);
            }
            if (s.startsWith("NumberLong(", i) || s.startsWith("NumberInt(", i)) {
                boolean longs = s.startsWith("NumberLong(", i);
                expect(longs ? "NumberLong(" : "NumberInt(");
                String digits = number();
                expect(")");
                if (!INT.matcher(digits).matches() || longs && !int32(digits)) throw JsonChecks.DECLINE;
                return new ExtendedJson.Typed(longs ? "int64" : "int32", digits, false);
            }
            if (s.startsWith("NumberDecimal(\"", i)) {
                String digits = quotedArgument("NumberDecimal(");
                if (!DECIMAL.matcher(digits).matches()) throw JsonChecks.DECLINE;
                return new ExtendedJson.Typed("decimal128", digits, false);
            }
            if (s.startsWith("new BinData(", i)) {
                expect("new BinData(");
                int from = i;
                while (peek() >= '0' && peek() <= '9') i++;
                String subtype = s.substring(from, i);
                if (!SUBTYPE.matcher(subtype).matches() || Integer.parseInt(subtype) > 255) throw JsonChecks.DECLINE;
                expect(", ");
                String base64 = quotedArgument("");
                if (!ExtendedJson.BASE64.matcher(base64).matches()) throw JsonChecks.DECLINE;
                return new ExtendedJson.Typed(subtype.equals("0") ? "binData" : "binData(" + subtype + ")", base64,
                        false);
            }
            if (s.startsWith("ISODate(\"", i)) {
                String iso = quotedArgument("ISODate(");
                String epoch = ISO_MILLIS.matcher(iso).matches() && !iso.startsWith("0000")
                        ? ExtendedJson.isoToEpoch(iso) : null;
                if (epoch == null) throw JsonChecks.DECLINE;  // an impossible date: the codec keeps it as written
                return new ExtendedJson.Typed("timestamp(3)", epoch, false);
            }
            if (s.startsWith("Timestamp(", i)) {
                expect("Timestamp(");
                String t = digits();
                expect(", ");
                String inc = digits();
                expect(")");
                return new ExtendedJson.Typed("bsonTimestamp", t + ":" + inc, false);
            }
            throw JsonChecks.DECLINE;  // regular expressions, MinKey, NaN, other constructors: kept as written
        }

        /** {@code call} (none: an argument after others), then a string written as it is ("..." without an escape),
         *  then ")". */
        private String quotedArgument(String call) {
            expect(call);
            expect("\"");
            int from = i;
            while (true) {
                char c = peek();
                if (c == '"') break;
                if (c == '\\' || c < 0x20) throw JsonChecks.DECLINE;
                i++;
            }
            String text = s.substring(from, i);
            expect("\")");
            return text;
        }

        private String digits() {
            int from = i;
            while (peek() >= '0' && peek() <= '9') i++;
            if (i == from) throw JsonChecks.DECLINE;
            return s.substring(from, i);
        }

        /** A number token, as the codec's tokenizer cuts one (bson_values.NUMBER in full). */
        private String number() {
            int from = i;
            while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
            String t = s.substring(from, i);
            if (!NUMBER.matcher(t).matches()) throw JsonChecks.DECLINE;
            return t;
        }

        private boolean word(String w) {
            if (!s.startsWith(w, i)) return false;
            int end = i + w.length();
            if (end < s.length() && (Character.isLetterOrDigit(s.charAt(end)) || s.charAt(end) == '_'
                    || s.charAt(end) == '$')) {
                return false;  // a longer name
            }
            i = end;
            return true;
        }

        /** A JSON string as Python's json writes it (ensure_ascii=False, the spelling OrjsonText.quote writes):
         *  its text. Another spelling of the same text (a raw control character, "\/", a backslash-u escape of
         *  printable text) would be written otherwise: declines. */
        private String string() {
            int from = i;
            expect("\"");
            boolean escaped = false;
            for (char c; (c = peek()) != '"'; i++) {
                if (c < 0x20) throw JsonChecks.DECLINE;  // the writer escapes these
                if (c == '\\') {
                    escaped = true;
                    i++;
                }
            }
            i++;
            if (!escaped) return JsonChecks.text(s.substring(from + 1, i - 1));
            String literal = s.substring(from, i);
            String text;
            try (JsonParser p = STRINGS.createParser(literal)) {
                p.nextToken();
                text = p.getText();
            } catch (java.io.IOException x) {
                throw JsonChecks.DECLINE;
            }
            StringBuilder again = new StringBuilder(literal.length());
            OrjsonText.quote(again, text);  // the writer's spelling, so that only it is read
            if (!again.toString().equals(literal)) throw JsonChecks.DECLINE;
            return JsonChecks.text(text);
        }

        /** A nested document or array in the driver's spacing, its compact text (Node.compact) appended: atoms as
         *  they are written, ", " and ": " without their blank. */
        private void nested(StringBuilder compact, int depth) {
            if (depth > MAX_DEPTH) throw JsonChecks.DECLINE;
            char open = peek();
            char close = open == '{' ? '}' : open == '[' ? ']' : '\0';
            if (close == '\0') {
                atom(compact, depth);
                return;
            }
            i++;
            compact.append(open);
            if (peek() == close) {
                i++;
                compact.append(close);
                return;
            }
            while (true) {
                if (close == '}') {
                    int from = i;
                    rawString(true);
                    compact.append(s, from, i);
                    expect(": ");
                    compact.append(':');
                }
                nested(compact, depth + 1);
                if (peek() == close) {
                    i++;
                    compact.append(close);
                    return;
                }
                expect(", ");
                compact.append(',');
            }
        }

        /** A value inside a nested document: a string, number, true/false/null or a constructor call, as
         *  written. */
        private void atom(StringBuilder compact, int depth) {
            char c = peek();
            int from = i;
            if (c == '"') {
                rawString(false);
            } else if (c == '-' || c >= '0' && c <= '9') {
                number();
            } else if (!(word("null") || word("true") || word("false"))) {
                call(compact, depth);
                return;
            }
            compact.append(s, from, i);
        }

        /** Name(args) or new Name(args), the arguments ", "-separated. */
        private void call(StringBuilder compact, int depth) {
            int from = i;
            if (s.startsWith("new ", i)) i += 4;
            char c = peek();
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '$')) throw JsonChecks.DECLINE;
            while (i < s.length() && (Character.isLetterOrDigit(s.charAt(i)) && s.charAt(i) < 0x80
                    || s.charAt(i) == '_' || s.charAt(i) == '$')) {
                i++;
            }
            String name = s.substring(from, i);
            if (name.equals("new") || name.equals("new new")) throw JsonChecks.DECLINE;
            expect("(");
            compact.append(name).append('(');
            if (peek() == ')') {
                i++;
                compact.append(')');
                return;
            }
            while (true) {
                nested(compact, depth + 1);
                if (peek() == ')') {
                    i++;
                    compact.append(')');
                    return;
                }
                expect(", ");
                compact.append(',');
            }
        }

        /** A double-quoted string as it is written; a key's must read as its text without an escape. */
        private void rawString(boolean key) {
            expect("\"");
            while (true) {
                char c = peek();
                if (c == '"') break;
                if (key && (c == '\\' || c < 0x20)) throw JsonChecks.DECLINE;
                i += c == '\\' ? 2 : 1;
            }
            i++;
        }
    }

    private static boolean int32(String digits) {
        return ExtendedJson.int32(new BigInteger(digits));
    }
}
