package cdcreplay.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.Aggregator;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The replay's counts as one aggregate: rows grouped by {@link #KEYS}, with per group the row count, the records
 * (rows that are the first of their record), the first and last offset and the latest event time, as the JSON text
 * of a list of groups ({@code cdc_jobs.transforms.accounting.summary_of} reads it). One aggregate rather than a
 * GROUP BY so that it can be an observed metric of the events write ({@code Dataset.observe}): the counts come
 * from the same pass that writes the events, and the decoded rows need not be kept for a second one. Groups are
 * few (sources x tables x ops x kinds), so the buffer stays small whatever the rows.
 */
public final class ReplayTally extends Aggregator<Row, ReplayTally.Groups, String> {
    public static final String NAME = "cdc_replay_tally";
    /** The grouping columns, then the summed ones, in the order the function takes them. */
    static final String[] KEYS = {"pos_source", "pos_partition", "table_name", "op", "kind", "kept", "assembled"};
    static final StructType INPUT = new StructType()
            .add("pos_source", DataTypes.StringType).add("pos_partition", DataTypes.IntegerType)
            .add("table_name", DataTypes.StringType).add("op", DataTypes.StringType)
            .add("kind", DataTypes.StringType).add("kept", DataTypes.StringType)
            .add("assembled", DataTypes.BooleanType).add("first_of_record", DataTypes.BooleanType)
            .add("pos_offset", DataTypes.LongType).add("event_time_ms", DataTypes.LongType);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Registers the function in the session (Python calls this once per session). */
    public static void register(SparkSession spark) {
        spark.udf().register(NAME, functions.udaf(new ReplayTally(), Encoders.row(INPUT)));
    }

    /** One group's sums; offsets and times NULL (Long.MIN/MAX sentinels unset) until a row has one. */
    static final class Counts implements Serializable {
        long rows;
        long records;
        boolean anyRecordFlag;
        long firstOffset = Long.MAX_VALUE;
        long lastOffset = Long.MIN_VALUE;
        boolean anyOffset;
        long maxTime = Long.MIN_VALUE;
        boolean anyTime;

        void add(Counts o) {
            rows += o.rows;
            records += o.records;
            anyRecordFlag |= o.anyRecordFlag;
            if (o.anyOffset) {
                firstOffset = Math.min(firstOffset, o.firstOffset);
                lastOffset = Math.max(lastOffset, o.lastOffset);
                anyOffset = true;
            }
            if (o.anyTime) {
                maxTime = Math.max(maxTime, o.maxTime);
                anyTime = true;
            }
        }
    }

    /** The buffer: counts by group key (the values of {@link #KEYS}; NULLs included). */
    public static final class Groups implements Serializable {
        final HashMap<List<Object>, Counts> byKey = new HashMap<>();
        // Rows come in runs of one group (a task reads one source in order): the last group is looked up first.
        transient List<Object> lastKey;
        transient Counts last;
    }

    @Override
    public Groups zero() {
        return new Groups();
    }

    @Override
    public Groups reduce(Groups b, Row r) {
        Object[] key = new Object[KEYS.length];
        for (int i = 0; i < key.length; i++) key[i] = r.isNullAt(i) ? null : r.get(i);
        List<Object> k = Arrays.asList(key);
        Counts c = k.equals(b.lastKey) ? b.last : b.byKey.computeIfAbsent(k, x -> new Counts());
        b.lastKey = k;
        b.last = c;
        c.rows++;
        if (!r.isNullAt(7)) {
            c.anyRecordFlag = true;
            if (r.getBoolean(7)) c.records++;
        }
        if (!r.isNullAt(8)) {
            long offset = r.getLong(8);
            c.firstOffset = Math.min(c.firstOffset, offset);
            c.lastOffset = Math.max(c.lastOffset, offset);
            c.anyOffset = true;
        }
        if (!r.isNullAt(9)) {
            c.maxTime = Math.max(c.maxTime, r.getLong(9));
            c.anyTime = true;
        }
        return b;
    }

    @Override
    public Groups merge(Groups a, Groups b) {
        for (Map.Entry<List<Object>, Counts> e : b.byKey.entrySet()) {
            a.byKey.computeIfAbsent(e.getKey(), x -> new Counts()).add(e.getValue());
        }
        a.lastKey = null;
        a.last = null;
        return a;
    }

    /** The groups as a JSON list of objects: the {@link #KEYS}, rows, records, first_offset, last_offset,
     * max_event_time_ms (NULL where SQL's SUM, MIN and MAX would give NULL). */
    @Override
    public String finish(Groups b) {
        List<Map<String, Object>> out = new ArrayList<>(b.byKey.size());
        for (Map.Entry<List<Object>, Counts> e : b.byKey.entrySet()) {
            Map<String, Object> row = new LinkedHashMap<>();
            for (int i = 0; i < KEYS.length; i++) row.put(KEYS[i], e.getKey().get(i));
            Counts c = e.getValue();
            row.put("rows", c.rows);
            row.put("records", c.anyRecordFlag ? c.records : null);
            row.put("first_offset", c.anyOffset ? c.firstOffset : null);
            row.put("last_offset", c.anyOffset ? c.lastOffset : null);
            row.put("max_event_time_ms", c.anyTime ? c.maxTime : null);
            out.add(row);
        }
        try {
            return JSON.writeValueAsString(out);
        } catch (Exception e) {
            throw new IllegalStateException("cannot write the replay's counts as JSON", e);
        }
    }

    @Override
    public Encoder<Groups> bufferEncoder() {
        return Encoders.javaSerialization(Groups.class);
    }

    @Override
    public Encoder<String> outputEncoder() {
        return Encoders.STRING();
    }
}
