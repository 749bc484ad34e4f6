package logrepair.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.CleanShutdownFileHandler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Kafka's own recovery of one partition dir, called as LogManager.loadLog calls it at start-up:
 * {@code UnifiedLog.create} with the checkpointed recovery point and log start offset, the
 * clean-shutdown flag, the topic config, a real scheduler, system time and a LogDirFailureChannel.
 *
 * <pre>
 * recover DIR --recovery-point N --log-start N [--clean-shutdown] [--config KEY=VALUE]... [--close handlers|clean]
 * recover DIR --from-log-dir [--config KEY=VALUE]... [--close handlers|clean]
 * recover --batch      (one JSON request per stdin line, one JSON answer per stdout line)
 * </pre>
 *
 * A request is {@code {"dir", "recovery_point", "log_start", "clean_shutdown", "config": {..}, "close"}},
 * or with {@code "from_log_dir": true} the recovery point, log start offset and clean-shutdown flag
 * are read from the parent log dir as LogManager.loadLogs reads them (Kafka's OffsetCheckpointFile:
 * a checkpoint that fails to read counts as empty, a partition missing from it starts at 0; the
 * {@code .kafka_cleanshutdown} marker). The values used are in the answer.
 * The answer says what Kafka did: {@code log_end_offset}, {@code segments} kept (base offset, size),
 * files {@code deleted} (gone, or renamed to {@code .deleted} for the scheduler's asynchronous
 * delete), or {@code error} (class, message, and {@code offline}: true when LogManager would take the
 * log dir offline — an IOException, or a KafkaStorageException over one — false when the exception
 * would stop the broker).
 *
 * <p>Closing: {@code handlers} (default) closes file handles only, leaving the dir as a broker killed
 * right after recovery leaves it: the active segment's .index and .timeindex keep Kafka's
 * preallocation to segment.index.bytes. {@code clean} is UnifiedLog.close(), a clean shutdown's
 * close: indexes trimmed to their entries and a producer snapshot taken at the log end. Neither
 * writes the log dir's clean-shutdown marker or checkpoints (those belong to LogManager).
 * file.delete.delay.ms defaults to one day here so no asynchronous delete fires during a run.
 */
public final class Recover {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static KafkaScheduler scheduler;

    private Recover() {}

    public static int run(String[] args) throws Exception {
        scheduler = new KafkaScheduler(1, true, "oracle-scheduler-");
        scheduler.startup();
        try {
            if (args.length == 1 && args[0].equals("--batch")) {
                return batch();
            }
            ObjectNode request = parseArgs(args);
            if (request == null) {
                System.err.println("usage: recover DIR --recovery-point N --log-start N [--clean-shutdown] "
                        + "[--config KEY=VALUE]... [--close handlers|clean] | recover --batch");
                return 2;
            }
            System.out.println(JSON.writeValueAsString(recover(request)));
            return 0;
        } finally {
            scheduler.shutdown();
        }
    }

    private static int batch() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = recover(JSON.readTree(line));
            } catch (Exception e) {
                answer = JSON.createObjectNode();
                answer.put("harness_error", e.toString());
            }
            System.out.println(JSON.writeValueAsString(answer));
            System.out.flush();
        }
        return 0;
    }

    private static ObjectNode parseArgs(String[] args) {
        ObjectNode request = JSON.createObjectNode();
        ObjectNode config = request.putObject("config");
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            boolean hasValue = i + 1 < args.length;
            switch (a) {
                case "--recovery-point":
                    if (!hasValue) return null;
                    request.put("recovery_point", Long.parseLong(args[++i]));
                    break;
                case "--log-start":
                    if (!hasValue) return null;
                    request.put("log_start", Long.parseLong(args[++i]));
                    break;
                case "--from-log-dir":
                    request.put("from_log_dir", true);
                    break;
                case "--clean-shutdown":
                    request.put("clean_shutdown", true);
                    break;
                case "--close":
                    if (!hasValue) return null;
                    request.put("close", args[++i]);
                    break;
                case "--config": {
                    if (!hasValue) return null;
                    String kv = args[++i];
                    int eq = kv.indexOf('=');
                    if (eq < 0) return null;
                    config.put(kv.substring(0, eq), kv.substring(eq + 1));
                    break;
                }
                default:
                    if (a.startsWith("--") || request.has("dir")) return null;
                    request.put("dir", a);
            }
        }
        return request.has("dir") ? request : null;
    }

    /** One partition dir through Kafka's start-up recovery; see the class comment for the answer. */
    static ObjectNode recover(JsonNode request) throws IOException {
        File dir = new File(request.get("dir").asText()).getAbsoluteFile();
        long recoveryPoint = request.path("recovery_point").asLong(0);
        long logStart = request.path("log_start").asLong(0);
        boolean cleanShutdown = request.path("clean_shutdown").asBoolean(false);
        String close = request.path("close").asText("handlers");
        ObjectNode answer = JSON.createObjectNode();
        answer.put("dir", dir.getPath());
        if (request.path("from_log_dir").asBoolean(false)) {
            File logDir = dir.getParentFile();
            TopicPartition tp = UnifiedLog.parseTopicPartitionName(dir);
            recoveryPoint = readCheckpoint(logDir, "recovery-point-offset-checkpoint", tp, answer);
            logStart = readCheckpoint(logDir, "log-start-offset-checkpoint", tp, answer);
            cleanShutdown = new CleanShutdownFileHandler(logDir.getPath()).exists();
        }
        answer.put("used_recovery_point", recoveryPoint);
        answer.put("used_log_start", logStart);
        answer.put("used_clean_shutdown", cleanShutdown);
        Map<String, Object> props = new HashMap<>();
        props.put("file.delete.delay.ms", "86400000");
        Iterator<Map.Entry<String, JsonNode>> it = request.path("config").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().asText());
        }

        Map<String, Long> before = listing(dir);
        LogDirFailureChannel failureChannel = new LogDirFailureChannel(10);
        UnifiedLog log = null;
        long started = System.nanoTime();
        try {
            LogConfig config = new LogConfig(props);
            log = UnifiedLog.create(dir, config, logStart, recoveryPoint, scheduler, new BrokerTopicStats(),
                    Time.SYSTEM, 900000, new ProducerStateManagerConfig(86400000, false), 600000,
                    failureChannel, cleanShutdown, Optional.empty(), new ConcurrentHashMap<>(), false,
                    LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
            answer.put("elapsed_ns", System.nanoTime() - started);
            answer.put("log_end_offset", log.logEndOffset());
            answer.put("log_start_offset", log.logStartOffset());
            answer.put("recovery_point", log.recoveryPoint());
            ArrayNode segments = answer.putArray("segments");
            for (LogSegment segment : log.logSegments()) {
                ObjectNode s = segments.addObject();
                s.put("base_offset", segment.baseOffset());
                s.put("size", segment.size());
                // the indexes' logical sizes: past them a file holds preallocation (zeros, or
                // entries a truncation dropped without clearing)
                s.put("index_bytes", segment.offsetIndex().sizeInBytes());
                s.put("time_index_bytes", segment.timeIndex().sizeInBytes());
            }
            answer.putNull("error");
        } catch (Throwable t) {
            answer.put("elapsed_ns", System.nanoTime() - started);
            ObjectNode error = answer.putObject("error");
            error.put("class", t.getClass().getName());
            error.put("message", String.valueOf(t.getMessage()));
            Throwable cause = t.getCause();
            error.put("cause", cause == null ? null : cause.getClass().getName());
            boolean offline = t instanceof IOException
                    || (t instanceof KafkaStorageException && cause instanceof IOException);
            error.put("offline", offline);
            ArrayNode at = error.putArray("at");
            Throwable root = cause != null ? cause : t;
            StackTraceElement[] frames = root.getStackTrace();
            for (int i = 0; i < Math.min(8, frames.length); i++) at.add(frames[i].toString());
        } finally {
            if (log != null) {
                if (close.equals("clean")) log.close();
                else log.closeHandlers();
            }
            drainScheduler();
        }
        Map<String, Long> after = listing(dir);
        ArrayNode deleted = answer.putArray("deleted");
        for (String name : before.keySet()) {
            if (!after.containsKey(name) || after.containsKey(name + ".deleted")) deleted.add(name);
        }
        ObjectNode files = answer.putObject("files");
        after.forEach(files::put);
        return answer;
    }

    /**
     * Waits for the tasks recovery handed the scheduler to run now (the leader-epoch checkpoint's
     * asynchronous flush): a no-op scheduled after them on the single scheduler thread runs last.
     * Deletes delayed by file.delete.delay.ms stay pending.
     */
    private static void drainScheduler() {
        try {
            scheduler.schedule("oracle-barrier", () -> { }, 0L, -1L).get();
        } catch (Exception e) {
            throw new IllegalStateException("scheduler barrier failed", e);
        }
    }

    /** LogManager.loadLogs: a checkpoint that cannot be read is an empty map (a warning), not a failure. */
    private static long readCheckpoint(File logDir, String name, TopicPartition tp, ObjectNode answer) {
        try {
            Long value = new OffsetCheckpointFile(new File(logDir, name), new LogDirFailureChannel(1)).read().get(tp);
            return value == null ? 0L : value;
        } catch (Exception e) {
            answer.put(name.replace('-', '_') + "_error", e.toString());
            return 0L;
        }
    }

    private static Map<String, Long> listing(File dir) {
        Map<String, Long> files = new TreeMap<>();
        File[] entries = dir.listFiles();
        if (entries != null) {
            for (File f : entries) files.put(f.getName(), f.length());
        }
        return files;
    }
}
