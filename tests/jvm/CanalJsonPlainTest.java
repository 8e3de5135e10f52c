package cdcreplay.codecs.canal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import cdcreplay.codecs.PlainDecoder;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** canal-json's JVM twin on single messages: what it decodes keeps values as text exactly, and what it is not
 *  sure of it declines (null) for the Python codec. tests/codecs/test_jvm_fast_paths.py holds it equal to the
 *  Python fast path over the fixtures; these pin the contract without Spark or Python. */
class CanalJsonPlainTest {
    private static final String UPDATE = "{\"data\":[{\"id\":\"1\",\"price\":\"721.8850\",\"note\":null}],"
            + "\"database\":\"shop\",\"es\":1700000000123,\"id\":0,\"isDdl\":false,"
            + "\"mysqlType\":{\"id\":\"bigint(20) unsigned\",\"price\":\"decimal(12,4)\",\"note\":\"varchar(20)\"},"
            + "\"old\":[{\"price\":\"18446744073709551615.0001\"}],\"pkNames\":[\"id\"],\"sql\":\"\","
            + "\"sqlType\":{\"id\":-5,\"price\":3,\"note\":12},\"table\":\"orders\",\"ts\":1700000000123,"
            + "\"type\":\"UPDATE\"}";

    private static List<Object[]> decode(String json) {
        byte[] framed = ("xx" + json + "yy").getBytes(StandardCharsets.UTF_8);  // an offset into a bigger block
        return new CanalJsonPlain().rows(framed, 2, framed.length - 4);
    }

    private static Object field(Object[] row, String name) {
        return row[Arrays.asList(PlainDecoder.FIELDS).indexOf(name)];
    }

    @Test
    @SuppressWarnings("unchecked")
    void anUpdateKeepsEveryValueAsItsTextAndNullApartFromMissing() {
        List<Object[]> rows = decode(UPDATE);
        assertNotNull(rows);
        assertEquals(1, rows.size());
        Object[] row = rows.get(0);
        assertEquals("UPDATE", field(row, "op"));
        assertEquals("shop.orders", field(row, "table_name"));
        assertEquals(List.of("id"), field(row, "primary_key"));
        assertEquals(1700000000123L, field(row, "event_time_ms"));
        assertEquals(new BigDecimal(1700000000123L), ((BigDecimal[]) field(row, "sequence"))[0]);
        Map<String, String> after = (Map<String, String>) field(row, "after");
        Map<String, String> before = (Map<String, String>) field(row, "before");
        assertEquals("721.8850", after.get("price"));  // the written scale survives
        assertTrue(after.containsKey("note") && after.get("note") == null);  // NULL, not missing
        assertEquals("18446744073709551615.0001", before.get("price"));
        assertEquals("1", before.get("id"));  // unchanged columns come from data
        assertEquals(List.of("id", "price", "note"), List.copyOf(after.keySet()));
    }

    @Test
    void declinesWhatThePythonCodecMustDecide() {
        assertNull(decode(UPDATE.replace("\"721.8850\"", "721.8850")));  // a bare float: orjson loses its text
        assertNull(decode(UPDATE.replace("\"isDdl\":false", "\"isDdl\":true")));  // DDL
        assertNull(decode(UPDATE.replace("\"type\":\"UPDATE\"", "\"type\":\"QUERY\"")));
        assertNull(decode(UPDATE.substring(0, UPDATE.length() - 1)));  // truncated JSON
        assertNull(decode(UPDATE.replace("\"note\":null}],", "\"note\":null,\"note\":\"x\"}],")));  // duplicate key
        assertNull(decode("[1,2]"));
    }
}
