package cdcreplay.codecs;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How the declared decode reads a connector's position in its source block ({@code positions} of a declaration:
 * Debezium's connectors, a rule per log kind) into the event's sequence, as {@code debezium_json._connector_position}
 * does. A value a rule does not read as the codec does declines.
 */
final class ConnectorPositions {
    private static final Object NULL = DeclaredJson.NULL;
    private static final BigDecimal[] NO_SEQUENCE = DeclaredJson.NO_SEQUENCE;

    private ConnectorPositions() {
    }

    /** The sequence parts of a position by its rule's name and keys; declines a rule the JVM does not read. */
    static BigDecimal[] read(String rule, Map<String, Object> src, String[] keys) throws java.io.IOException {
        switch (rule) {
            case "binlog": return binlogPosition(src, keys);
            case "lsn": return lsnPosition(src, keys);
            case "hex_lsns": return hexLsnPosition(src, keys);
            case "scn": return scnPosition(src, keys);
            case "oplog": return oplogPosition(src, keys);
            default: throw JsonChecks.DECLINE;  // a position left to the codec
        }
    }

    private static Object value(Map<String, Object> src, String key) {
        Object v = src.get(key);
        return v == null ? NULL : v;  // absent is null, as the codec reads it
    }

    /** A binlog's (keys: file, pos, row): the file name's trailing number ("" or none: 0, a snapshot's), the
     *  offset (absent: 0), the row (none: 0); none where neither file nor offset is given. */
    private static BigDecimal[] binlogPosition(Map<String, Object> src, String[] keys) {
        Object file = value(src, keys[0]), pos = value(src, keys[1]), row = value(src, keys[2]);
        if (file == NULL && pos == NULL) return NO_SEQUENCE;
        BigDecimal number = BigDecimal.ZERO;
        if (file instanceof String && !((String) file).isEmpty()) {
            String f = (String) file;
            int end = f.length(), start = end;
            for (int i = 0; i < end; i++) if (f.charAt(i) > 0x7e) throw JsonChecks.DECLINE;  // \d, \s beyond ASCII
            while (start > 0 && f.charAt(start - 1) >= '0' && f.charAt(start - 1) <= '9') start--;
            if (start == end || end - start > 36) throw JsonChecks.DECLINE;  // no number at its end: the codec's error
            number = new BigDecimal(f.substring(start, end));
        } else if (file != NULL && !"".equals(file)) {
            throw JsonChecks.DECLINE;
        }
        if (pos == NULL && src.containsKey(keys[1])) throw JsonChecks.DECLINE;  // a null offset: the codec's error
        return new BigDecimal[] {number, pos == NULL ? BigDecimal.ZERO : positionNumber(pos),
                row == NULL ? BigDecimal.ZERO : positionNumber(row)};
    }

    /** A log sequence number's (keys: sequence, lsn): the pair [last commit, lsn] a sequence text holds (a null
     *  first is 0, a null second the lsn), else the lsn alone; none without either. */
    private static BigDecimal[] lsnPosition(Map<String, Object> src, String[] keys) throws java.io.IOException {
        Object sequence = value(src, keys[0]), lsn = value(src, keys[1]);
        if (sequence instanceof DeclaredJson.Num) throw JsonChecks.DECLINE;  // a number where the pair's text belongs
        if (sequence instanceof String && !((String) sequence).isEmpty()) {
            Object pair = DeclaredJson.whole((String) sequence);
            if (!(pair instanceof List) || ((List<?>) pair).size() != 2) throw JsonChecks.DECLINE;
            Object last = ((List<?>) pair).get(0), next = ((List<?>) pair).get(1);
            return new BigDecimal[] {last == NULL ? BigDecimal.ZERO : lsn(last), lsn(next == NULL ? lsn : next)};
        }
        return lsn == NULL ? NO_SEQUENCE : new BigDecimal[] {lsn(lsn)};
    }

    /** An LSN: the number, or its "X/Y" text (hex halves). */
    private static BigDecimal lsn(Object v) {
        String text = v instanceof DeclaredJson.Num ? ((DeclaredJson.Num) v).text : v instanceof String ? (String) v : null;
        int slash = text == null ? -1 : text.indexOf('/');
        if (slash < 0) return positionNumber(v);
        String hi = text.substring(0, slash), lo = text.substring(slash + 1);
        if (!hex(hi) || !hex(lo) || hi.length() > 16 || lo.length() > 16) throw JsonChecks.DECLINE;
        return new BigDecimal(new java.math.BigInteger(hi, 16).shiftLeft(32).add(new java.math.BigInteger(lo, 16)));
    }

    private static boolean hex(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0 || s.charAt(i) > 'f') return false;
        }
        return true;
    }

    /** Hex LSNs' (keys: commit_lsn, change_lsn, event_serial_no): each LSN's hex groups as one number ("", "NULL"
     *  or none: 0), then the serial number where there is one; none where all are 0. */
    private static BigDecimal[] hexLsnPosition(Map<String, Object> src, String[] keys) {
        List<BigDecimal> out = new ArrayList<>(3);
        for (int i = 0; i < 2; i++) {
            Object v = value(src, keys[i]);
            String text = v instanceof DeclaredJson.Num ? ((DeclaredJson.Num) v).text : v instanceof String ? (String) v : null;
            if (v == NULL || "".equals(text) || "NULL".equals(text)) {
                out.add(BigDecimal.ZERO);
                continue;
            }
            if (text == null || text.length() > 96) throw JsonChecks.DECLINE;
            for (String group : text.split(":", -1)) if (!hex(group)) throw JsonChecks.DECLINE;
            java.math.BigInteger lsn = new java.math.BigInteger(text.replace(":", ""), 16);
            if (lsn.bitLength() > 120) throw JsonChecks.DECLINE;  // beyond decimal(38,0): the codec names it
            out.add(new BigDecimal(lsn));
        }
        Object serial = value(src, keys[2]);
        if (serial != NULL) out.add(positionNumber(serial));
        for (BigDecimal part : out) if (part.signum() != 0) return out.toArray(new BigDecimal[0]);
        return NO_SEQUENCE;
    }

    /** A system change number's (keys: scn, commit_scn): the commit's ("" or none: the change's), then the
     *  change's; none without a change's. */
    private static BigDecimal[] scnPosition(Map<String, Object> src, String[] keys) {
        Object scn = value(src, keys[0]), commit = value(src, keys[1]);
        if (scn == NULL) return NO_SEQUENCE;
        BigDecimal change = positionNumber(scn);
        return new BigDecimal[] {commit == NULL || "".equals(commit) ? change : positionNumber(commit), change};
    }

    /** An oplog's (keys: ts_ms, ord): its time (none: 0) and the increment within it; none without an increment. */
    private static BigDecimal[] oplogPosition(Map<String, Object> src, String[] keys) {
        Object ts = value(src, keys[0]), ord = value(src, keys[1]);
        if (ord == NULL) return NO_SEQUENCE;
        return new BigDecimal[] {ts == NULL ? BigDecimal.ZERO : positionNumber(ts), positionNumber(ord)};
    }

    /** A position's integer, written as a number or as a string of digits. */
    private static BigDecimal positionNumber(Object v) {
        String text = v instanceof DeclaredJson.Num ? ((DeclaredJson.Num) v).text : v instanceof String ? (String) v : null;
        if (text == null || !JsonChecks.integerText(text, 36)) throw JsonChecks.DECLINE;
        return new BigDecimal(text);
    }
}
