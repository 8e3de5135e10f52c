package cdcreplay.codecs.dts;

import cdcreplay.codecs.OrjsonText;
import cdcreplay.codecs.RecordDecoder;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * dts-avro's container fast path in the JVM: {@code dts_avro_rows.plain_rows} (codecs/dts/dts_avro_rows.py), test
 * for test, reading the record's bytes itself (the layout of {@code RECORD15}; {@link Record14} without the
 * trailing bornTimestamp). It declines more than the Python fast path where mirroring would be long and the values
 * are rare: Float, Timestamp, time-zoned, geometry and object values, an EmptyObject NULL, a value kept for
 * re-encoding other than an Integer of another precision, charsets other than UTF-8's names, names and keys that
 * are not printable ASCII. The Python codec decodes those.
 */
public class DtsAvroPlain implements RecordDecoder {
    private static final String NS = "com.alibaba.dts.formats.avro.";
    private static final String[] OPERATIONS = {"INSERT", "UPDATE", "DELETE", "DDL", "BEGIN", "COMMIT", "ROLLBACK",
            "ABORT", "HEARTBEAT", "CHECKPOINT", "COMMAND", "FILL", "FINISH", "CONTROL", "RDB", "NOOP", "INIT"};
    private static final String[] SOURCE_TYPES = {"MySQL", "Oracle", "SQLServer", "PostgreSQL", "MongoDB", "Redis",
            "DB2", "PPAS", "DRDS", "HBASE", "HDFS", "FILE", "OTHER"};
    // The branches of an image item's union, in the schema's order.
    private static final int NULL = 0, INTEGER = 1, CHARACTER = 2, DECIMAL = 3, FLOAT = 4, TIMESTAMP = 5,
            DATETIME = 6, ZONED = 7, BINARY_GEOMETRY = 8, TEXT_GEOMETRY = 9, BINARY_OBJECT = 10, TEXT_OBJECT = 11,
            EMPTY = 12;
    private static final long NO_SEQUENCE_ID = -1;
    private static final int MAX_NAME = 256;
    // MySQL's and Oracle's names of UTF-8 (python_charset gives "utf-8" for them); any other spelling: Python.
    private static final java.util.Set<String> UTF8_NAMES = new java.util.HashSet<>(
            Arrays.asList("utf8", "utf8mb3", "utf8mb4", "al32utf8", "utf-8"));
    private static final JsonFactory JSON = new JsonFactory();

    /** The bytes are not a record of this layout: the Python reader takes the rest of the file. */
    private static final class Broken extends RuntimeException {
        Broken() { super(null, null, false, false); }
    }
    private static final Broken BROKEN = new Broken();

    /** A record this twin does not decode: the Python codec does. */
    private static final class Bail extends RuntimeException {
        Bail() { super(null, null, false, false); }
    }
    private static final Bail BAIL = new Bail();

    private final boolean born;
    // Strict UTF-8 for every string and Character value: one decoder for the instance (an adapter's, one task's).
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

    public DtsAvroPlain() { this(true); }

    protected DtsAvroPlain(boolean born) { this.born = born; }

    /** The layout without the trailing bornTimestamp ({@code RECORD14}). */
    public static final class Record14 extends DtsAvroPlain {
        public Record14() { super(false); }
    }

    // ------------------------------------------------------------------------------------------------ reading

    /** One image item: its union branch and the fields of its record (ints as longs: fastavro reads an Avro int
     *  as a varint of any size, and the Python fast path checks the 32-bit range itself). */
    private static final class Item {
        int kind;
        long precision, scale;        // Integer's precision, Decimal's precision and scale
        String text;                  // Integer's and Decimal's value, the charset of a Character
        byte[] bytes;                 // Character's value
        final Long[] dt = new Long[7];  // DateTime: year, month, day, hour, minute, second, millis (null: unset)
        int empty;                    // EmptyObject: 0 NULL, 1 NONE
    }

    /** A record as read. */
    private static final class Rec {
        long version, id, sourceTimestamp, bornTimestamp;
        String sourcePosition, safeSourcePosition, sourceTxid, sourceVersion, objectName;
        int sourceType, operation;
        long[] processTimestamps;
        LinkedHashMap<String, String> tags;
        int fieldsBranch;
        String[] names;
        long[] numbers;
        int beforeBranch, afterBranch;
        Item[] before, after;
    }

    private static final class Cursor {
        final byte[] b;
        int pos;
        final int limit;
        final CharsetDecoder utf8;

        Cursor(byte[] b, int pos, int limit, CharsetDecoder utf8) {
            this.b = b; this.pos = pos; this.limit = limit; this.utf8 = utf8;
        }

        long readLong() {
            long n = 0;
            int shift = 0;
            while (true) {
                if (pos >= limit || shift > 63) throw BROKEN;
                int x = b[pos++] & 0xff;
                n |= (long) (x & 0x7f) << shift;
                if ((x & 0x80) == 0) break;
                shift += 7;
            }
            if (shift == 63 && (b[pos - 1] & 0x7e) != 0) throw BROKEN;  // more than 64 bits
            return (n >>> 1) ^ -(n & 1);
        }

        int index(int size) {
            long i = readLong();
            if (i < 0 || i >= size) throw BROKEN;
            return (int) i;
        }

        int length() {
            long n = readLong();
            if (n < 0 || n > limit - pos) throw BROKEN;
            return (int) n;
        }

        byte[] readBytes() {
            int n = length();
            byte[] out = Arrays.copyOfRange(b, pos, pos + n);
            pos += n;
            return out;
        }

        String readString() {
            int n = length();
            String s = utf8(b, pos, n, utf8);
            if (s == null) throw BROKEN;  // fastavro's strict decode raises
            pos += n;
            return s;
        }

        void skip(int n) {
            if (n > limit - pos) throw BROKEN;
            pos += n;
        }

        /** An array's or a map's next block count: negative counts carry the block's size after them. */
        long blockCount() {
            long n = readLong();
            if (n < 0) {
                if (n == Long.MIN_VALUE) throw BROKEN;
                readLong();
                n = -n;
            }
            return n;
        }
    }

    /** Strict UTF-8, as Python's bytes.decode("utf-8"): null where that raises. */
    private static String utf8(byte[] b, int off, int n, CharsetDecoder decoder) {
        boolean ascii = true;
        for (int i = off; i < off + n; i++) {
            if (b[i] < 0) { ascii = false; break; }
        }
        if (ascii) return new String(b, off, n, StandardCharsets.ISO_8859_1);
        try {
            CharBuffer chars = decoder.reset().decode(ByteBuffer.wrap(b, off, n));
            return chars.toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private Rec read(Cursor c) {
        Rec r = new Rec();
        r.version = c.readLong();
        r.id = c.readLong();
        r.sourceTimestamp = c.readLong();
        r.sourcePosition = c.readString();
        r.safeSourcePosition = c.readString();
        r.sourceTxid = c.readString();
        r.sourceType = c.index(SOURCE_TYPES.length);
        r.sourceVersion = c.readString();
        r.operation = c.index(OPERATIONS.length);
        r.objectName = c.index(2) == 1 ? c.readString() : null;
        if (c.index(2) == 1) {
            List<Long> stamps = new ArrayList<>();
            for (long n = c.blockCount(); n != 0; n = c.blockCount()) {
                for (long k = 0; k < n; k++) stamps.add(c.readLong());
            }
            r.processTimestamps = new long[stamps.size()];
            for (int i = 0; i < stamps.size(); i++) r.processTimestamps[i] = stamps.get(i);
        }
        r.tags = new LinkedHashMap<>();
        for (long n = c.blockCount(); n != 0; n = c.blockCount()) {
            for (long k = 0; k < n; k++) {
                String key = c.readString();
                r.tags.put(key, c.readString());  // a repeated key: the first place, the last value (a dict's)
            }
        }
        r.fieldsBranch = c.index(3);
        if (r.fieldsBranch == 1) {
            c.readString();
        } else if (r.fieldsBranch == 2) {
            List<String> names = new ArrayList<>();
            List<Long> numbers = new ArrayList<>();
            for (long n = c.blockCount(); n != 0; n = c.blockCount()) {
                for (long k = 0; k < n; k++) {
                    names.add(c.readString());
                    numbers.add(c.readLong());
                }
            }
            r.names = names.toArray(new String[0]);
            r.numbers = new long[numbers.size()];
            for (int i = 0; i < numbers.size(); i++) r.numbers[i] = numbers.get(i);
        }
        r.beforeBranch = c.index(3);
        r.before = image(c, r.beforeBranch);
        r.afterBranch = c.index(3);
        r.after = image(c, r.afterBranch);
        if (born) r.bornTimestamp = c.readLong();
        return r;
    }

    private static Item[] image(Cursor c, int branch) {
        if (branch == 1) {
            c.readString();
            return null;
        }
        if (branch != 2) return null;
        List<Item> items = new ArrayList<>();
        for (long n = c.blockCount(); n != 0; n = c.blockCount()) {
            for (long k = 0; k < n; k++) items.add(item(c));
        }
        return items.toArray(new Item[0]);
    }

    private static Item item(Cursor c) {
        Item v = new Item();
        v.kind = c.index(13);
        switch (v.kind) {
            case NULL: break;
            case INTEGER: v.precision = c.readLong(); v.text = c.readString(); break;
            case CHARACTER: v.text = c.readString(); v.bytes = c.readBytes(); break;
            case DECIMAL: v.text = c.readString(); v.precision = c.readLong(); v.scale = c.readLong(); break;
            case FLOAT: c.skip(8); c.readLong(); c.readLong(); break;
            case TIMESTAMP: c.readLong(); c.readLong(); break;
            case DATETIME: dateTime(c, v.dt); break;
            case ZONED: dateTime(c, new Long[7]); c.readString(); break;
            case BINARY_GEOMETRY: case BINARY_OBJECT: c.readString(); c.readBytes(); break;
            case TEXT_GEOMETRY: case TEXT_OBJECT: c.readString(); c.readString(); break;
            default: v.empty = c.index(2);
        }
        return v;
    }

    private static void dateTime(Cursor c, Long[] dt) {
        for (int i = 0; i < 7; i++) dt[i] = c.index(2) == 1 ? c.readLong() : null;
    }

    // The last record recordEnd parsed, which rows() of the same bytes then takes.
    private byte[] lastBuf;
    private int lastOff = -1, lastEnd;
    private Rec lastRec;

    @Override
    public int recordEnd(byte[] buf, int off, int limit) {
        try {
            Cursor c = new Cursor(buf, off, limit, utf8);
            Rec r = read(c);
            lastBuf = buf;
            lastOff = off;
            lastEnd = c.pos;
            lastRec = r;
            return c.pos;
        } catch (Broken e) {
            lastBuf = null;
            return -1;
        }
    }

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len) {
        Rec r;
        if (buf == lastBuf && off == lastOff && off + len == lastEnd) {
            r = lastRec;
        } else {
            try {
                Cursor c = new Cursor(buf, off, off + len, utf8);
                r = read(c);
                if (c.pos != off + len) return null;  // bytes left over: not one record
            } catch (Broken e) {
                return null;
            }
        }
        lastBuf = null;
        try {
            return decode(r);
        } catch (RuntimeException e) {
            return null;  // Bail, or whatever the rules did not foresee: the Python codec decides
        }
    }

    // ----------------------------------------------------------------------------------------------- decoding

    private static boolean int32(long v) {
        return v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
    }

    private static boolean int32(Long v) {
        return v == null || int32(v.longValue());
    }

    /** Python's name_fits, for printable ASCII (isprintable() beyond it: Python decides). */
    private static void nameFits(String s) {
        if (s.length() > MAX_NAME) throw BAIL;
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch < 0x20 || ch > 0x7e || ch == '/' || ch == ':') throw BAIL;
        }
    }

    /** A column's type and spec, from its first typed value (``_rows``' declaration loop). */
    private static final class Typed {
        final String typeName;
        final int kind;          // INTEGER, CHARACTER, DECIMAL or DATETIME
        final long precision;    // Integer's
        final String charset;    // Character's
        final boolean millisNull;  // DateTime's
        Typed(String typeName, int kind, long precision, String charset, boolean millisNull) {
            this.typeName = typeName; this.kind = kind; this.precision = precision; this.charset = charset;
            this.millisNull = millisNull;
        }
    }

    private final HashMap<List<String>, List<Object[]>> declarations = new HashMap<>();
    private final HashMap<String, List<String>> keys = new HashMap<>();

    private List<Object[]> decode(Rec r) {
        String op;
        switch (OPERATIONS[r.operation]) {
            case "INSERT": op = "INSERT"; break;
            case "UPDATE": op = "UPDATE"; break;
            case "DELETE": op = "DELETE"; break;
            case "INIT": op = "SNAPSHOT"; break;
            default: return null;
        }
        String name = r.objectName;
        if (name == null || r.fieldsBranch != 2 || !int32(r.version)) return null;
        int dot = name.indexOf('.');
        if (dot < 0 || name.indexOf('.', dot + 1) >= 0 || name.contains("\\u002E")) return null;
        String database = name.substring(0, dot), table = name.substring(dot + 1);
        if (table.isEmpty()) return null;  // a row event needs its table: decode names it (contract.py)
        nameFits(database);
        nameFits(table);
        long stamp;
        try {
            stamp = Math.multiplyExact(r.sourceTimestamp, 1000L);
        } catch (ArithmeticException e) {
            return null;
        }
        String[] names = r.names;
        int n = names.length;
        if (new java.util.HashSet<>(Arrays.asList(names)).size() != n) return null;
        for (long number : r.numbers) if (!int32(number)) return null;
        Item[] before = r.beforeBranch == 2 ? r.before : null, after = r.afterBranch == 2 ? r.after : null;
        if (r.beforeBranch == 1 || r.afterBranch == 1) return null;  // an image as text: not a list
        // The images the operation implies (dts_avro.REQUIRED): without them decode names the missing one.
        if ((after == null && !op.equals("DELETE")) || (before == null && (op.equals("DELETE") || op.equals("UPDATE"))))
            return null;
        if ((before != null && before.length != n) || (after != null && after.length != n)) return null;
        String info = r.tags.get("pk_uk_info");
        List<String> pk = info == null || info.isEmpty() ? Collections.emptyList() : keyColumns(info);

        // The declaration: each column typed by its first typed value, after image first.
        Typed[] typed = new Typed[n];
        String[] types = new String[n];
        for (int i = 0; i < n; i++) {
            Item v = null;
            for (Item[] side : new Item[][]{after, before}) {
                if (side == null || side.length == 0) continue;
                if (side[i].kind != NULL && side[i].kind != EMPTY) { v = side[i]; break; }
            }
            if (v == null) continue;
            switch (v.kind) {
                case INTEGER: typed[i] = new Typed("INTEGER", INTEGER, v.precision, null, false); break;
                case CHARACTER: typed[i] = new Typed("CHARACTER", CHARACTER, 0, v.text, false); break;
                case DECIMAL:
                    typed[i] = new Typed("DECIMAL(" + v.precision + "," + v.scale + ")", DECIMAL, 0, null, false);
                    break;
                case DATETIME:
                    for (int k = 0; k < 6; k++) if (v.dt[k] == null) throw BAIL;  // a DATE or TIME column: Python
                    typed[i] = new Typed("DATETIME", DATETIME, 0, null, v.dt[6] == null);
                    break;
                default: throw BAIL;
            }
            types[i] = typed[i].typeName;
        }
        List<String> declKey = new ArrayList<>(2 * n);
        for (int i = 0; i < n; i++) {
            declKey.add(names[i]);
            declKey.add(types[i]);
        }
        List<Object[]> columns = declarations.get(declKey);
        if (columns == null) {
            columns = new ArrayList<>(n);
            for (int i = 0; i < n; i++) columns.add(new Object[]{names[i], types[i], null, Boolean.FALSE});
            if (declarations.size() >= 4096) declarations.clear();
            declarations.put(declKey, columns);
        }

        StringBuilder kept = new StringBuilder();
        Map<String, String> beforeCells = null, afterCells = null;
        if (before != null) {
            beforeCells = new LinkedHashMap<>();
            String raw = image(before, names, typed, beforeCells);
            if (raw != null) kept.append("\"before\":").append(raw);
        }
        if (after != null) {
            afterCells = new LinkedHashMap<>();
            String raw = image(after, names, typed, afterCells);
            if (raw != null) kept.append(kept.length() > 0 ? "," : "").append("\"after\":").append(raw);
        }

        StringBuilder vendor = new StringBuilder(256);
        vendor.append("{\"version\":").append(r.version);
        vendor.append(",\"sourcePosition\":");
        OrjsonText.quote(vendor, r.sourcePosition);
        vendor.append(",\"safeSourcePosition\":");
        OrjsonText.quote(vendor, r.safeSourcePosition);
        vendor.append(",\"source\":{\"sourceType\":");
        OrjsonText.quote(vendor, SOURCE_TYPES[r.sourceType]);
        vendor.append(",\"version\":");
        OrjsonText.quote(vendor, r.sourceVersion);
        vendor.append("},\"tags\":{");
        boolean more = false;
        for (Map.Entry<String, String> e : r.tags.entrySet()) {
            if (more) vendor.append(',');
            more = true;
            OrjsonText.quote(vendor, e.getKey());
            vendor.append(':');
            OrjsonText.quote(vendor, e.getValue());
        }
        vendor.append("},\"born\":");
        vendor.append(born ? Long.toString(r.bornTimestamp) : "null");
        if (r.processTimestamps != null) {
            vendor.append(",\"processTimestamps\":[");
            for (int i = 0; i < r.processTimestamps.length; i++) {
                if (i > 0) vendor.append(',');
                vendor.append(r.processTimestamps[i]);
            }
            vendor.append(']');
        }
        vendor.append(",\"fields\":[");
        for (int i = 0; i < n; i++) {
            if (i > 0) vendor.append(',');
            vendor.append(r.numbers[i]);
        }
        vendor.append(']');
        more = false;
        for (int i = 0; i < n; i++) {
            Typed t = typed[i];
            if (t == null) continue;
            vendor.append(more ? "," : ",\"specs\":{");
            more = true;
            OrjsonText.quote(vendor, names[i]);
            switch (t.kind) {
                case INTEGER:
                    vendor.append(":{\"kind\":\"Integer\",\"precision\":").append(t.precision).append('}');
                    break;
                case CHARACTER:
                    vendor.append(":{\"kind\":\"Character\",\"charset\":");
                    OrjsonText.quote(vendor, t.charset);
                    vendor.append('}');
                    break;
                case DECIMAL: vendor.append(":{\"kind\":\"Decimal\"}"); break;
                default:
                    vendor.append(t.millisNull ? ":{\"kind\":\"DateTime\",\"millis_null\":true}"
                            : ":{\"kind\":\"DateTime\"}");
            }
        }
        if (more) vendor.append('}');
        if (kept.length() > 0) vendor.append(",\"raw\":{").append(kept).append('}');
        vendor.append('}');

        BigDecimal[] sequence = r.id == NO_SEQUENCE_ID ? new BigDecimal[0] : new BigDecimal[]{BigDecimal.valueOf(r.id)};
        String tableName = database.isEmpty() ? table : table.isEmpty() ? database : database + "." + table;
        Object[] row = {op, database, table, tableName, beforeCells, afterCells, columns, pk, stamp, sequence, 0,
                vendor.toString(), Boolean.TRUE, r.sourceTxid.isEmpty() ? null : r.sourceTxid};
        return Collections.singletonList(row);
    }

    /** One side's cells (``_image``), filled into {@code out}; the JSON of the values kept for re-encoding, or
     *  null when none is. */
    private String image(Item[] image, String[] names, Typed[] typed, Map<String, String> out) {
        StringBuilder kept = null;
        for (int i = 0; i < image.length; i++) {
            Item v = image[i];
            String name = names[i];
            Typed t = typed[i];
            switch (v.kind) {
                case NULL:
                    out.put(name, null);
                    break;
                case EMPTY:
                    if (v.empty != 1) throw BAIL;  // an EmptyObject NULL: compared by the reference
                    break;  // NONE: not in this image
                case INTEGER: {
                    if (!int32(v.precision) || !integerText(v.text)) throw BAIL;
                    out.put(name, v.text);
                    if (t == null || t.kind != INTEGER) throw BAIL;
                    if (t.precision == v.precision) break;
                    // image_value gives the column's precision: the value's own is kept for re-encoding
                    if (kept == null) kept = new StringBuilder("{");
                    else kept.append(',');
                    OrjsonText.quote(kept, name);
                    kept.append(":{\"$type\":\"").append(NS).append("Integer\",\"$value\":{\"precision\":")
                            .append(v.precision).append(",\"value\":");
                    OrjsonText.quote(kept, v.text);
                    kept.append("}}");
                    break;
                }
                case DECIMAL:
                    if (!int32(v.precision) || !int32(v.scale)) throw BAIL;
                    out.put(name, v.text);
                    if (t == null || t.kind != DECIMAL || v.precision < 0 || v.scale < 0
                            || !t.typeName.equals("DECIMAL(" + v.precision + "," + v.scale + ")")) {
                        throw BAIL;
                    }
                    break;
                case DATETIME:
                    for (Long f : v.dt) if (!int32(f)) throw BAIL;
                    if (t == null || t.kind != DATETIME || t.millisNull || !plainDateTime(v.dt)) throw BAIL;
                    out.put(name, dateTimeText(v.dt));
                    break;
                case CHARACTER: {
                    if (!UTF8_NAMES.contains(v.text)) throw BAIL;
                    String text = utf8(v.bytes, 0, v.bytes.length, utf8);
                    if (text == null) throw BAIL;
                    out.put(name, text);
                    if (t == null || t.kind != CHARACTER || !t.charset.equals(v.text)) throw BAIL;
                    break;
                }
                default:
                    throw BAIL;
            }
        }
        return kept == null ? null : kept.append('}').toString();
    }

    /** Python's INT_RE ([+-]?\d+\Z) for ASCII digits (other Unicode digits: Python decides). */
    private static boolean integerText(String s) {
        int i = s.startsWith("+") || s.startsWith("-") ? 1 : 0;
        if (i >= s.length()) return false;
        for (; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch < '0' || ch > '9') {
                if (Character.isDigit(ch)) throw BAIL;
                return false;
            }
        }
        return true;
    }

    /** ``_plain_datetime``: all seven fields set, a year of at most four digits, two-digit others. */
    private static boolean plainDateTime(Long[] dt) {
        for (Long f : dt) if (f == null) return false;
        long y = dt[0];
        if (y < -9999 || y > 9999) return false;
        for (int k = 1; k < 6; k++) if (dt[k] < 0 || dt[k] > 99) return false;
        return dt[6] >= 0 && dt[6] < 1_000_000;
    }

    /** date_text + " " + time_text, millis holding microseconds. */
    private static String dateTimeText(Long[] dt) {
        StringBuilder s = new StringBuilder(26);
        long y = dt[0];
        if (y < 0) s.append('-');
        pad(s, Math.abs(y), 4);
        s.append('-');
        pad(s, dt[1], 2);
        s.append('-');
        pad(s, dt[2], 2);
        s.append(' ');
        pad(s, dt[3], 2);
        s.append(':');
        pad(s, dt[4], 2);
        s.append(':');
        pad(s, dt[5], 2);
        long micros = dt[6];
        if (micros != 0) {
            StringBuilder f = new StringBuilder();
            pad(f, micros * 1000, 9);
            int end = f.length();
            while (f.charAt(end - 1) == '0') end--;
            s.append('.').append(f, 0, end);
        }
        return s.toString();
    }

    private static void pad(StringBuilder s, long v, int width) {
        String digits = Long.toString(v);
        for (int k = digits.length(); k < width; k++) s.append('0');
        s.append(digits);
    }

    /** ``key_columns``: PRIMARY, else the first key of the tags' key JSON; once per distinct text. */
    private List<String> keyColumns(String info) {
        List<String> hit = keys.get(info);
        if (hit == null) {
            hit = parseKeys(info);
            if (keys.size() >= 4096) keys.clear();
            keys.put(info, hit);
        }
        if (hit == BAILED) throw BAIL;
        return hit;
    }

    private static final List<String> BAILED = Collections.unmodifiableList(new ArrayList<>());

    /** json.loads of an object of arrays; BAILED where Python might read it otherwise (or reject it). */
    private static List<String> parseKeys(String info) {
        try (JsonParser p = JSON.createParser(info)) {
            if (p.nextToken() != JsonToken.START_OBJECT) return BAILED;
            LinkedHashMap<String, List<Object>> lists = new LinkedHashMap<>();
            for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
                String key = p.currentName();
                if (p.nextToken() != JsonToken.START_ARRAY) return BAILED;  // not a list: Python raises
                List<Object> items = new ArrayList<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_ARRAY; k = p.nextToken()) {
                    if (k != JsonToken.VALUE_STRING) return BAILED;
                    items.add(p.getText());
                }
                lists.put(key, items);  // a repeated key: the first place, the last value (json.loads' dict)
            }
            if (p.nextToken() != null) return BAILED;
            List<Object> primary = lists.get("PRIMARY");
            List<Object> key = primary != null && !primary.isEmpty() ? primary
                    : lists.isEmpty() ? Collections.emptyList() : lists.values().iterator().next();
            List<String> out = new ArrayList<>(key.size());
            for (Object k : key) {
                String s = (String) k;
                for (int i = 0; i < s.length(); i++) if (Character.isSurrogate(s.charAt(i))) return BAILED;
                out.add(s);
            }
            return out;
        } catch (java.io.IOException | RuntimeException e) {
            return BAILED;
        }
    }
}
