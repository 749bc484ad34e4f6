package logrepair.oracle;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.common.utils.Time;

/**
 * `broker`: a single-node KRaft broker (broker and controller in one process, as
 * kafka-server-start runs a combined node) on one log dir, for tests that produce to it, SIGKILL
 * it and start it again on the same dir.
 *
 * <p>{@code broker --log-dir DIR [--cluster-id ID] [--port N --controller-port N] [--segment-bytes N]
 * [--roll-ms N] [--flush-messages N] [--flush-ms N] [--set KEY=VALUE]...}. The dir is formatted on
 * first use (with a fixed cluster id) and reused as it is after. Listeners bind 127.0.0.1, on free
 * ports unless given; once the broker is unfenced and serving, one JSON line gives them on stdout. A line "shutdown" (or
 * the end of stdin) shuts it down cleanly; SIGKILL is the unclean stop. Kafka's own logging goes
 * to stderr.
 */
public final class Broker {
    static final String DEFAULT_CLUSTER_ID = "bG9ncmVwYWlyLWJyb2tlcg";

    private Broker() {}

    public static void run(String[] args) throws Exception {
        Path logDir = null;
        String clusterId = DEFAULT_CLUSTER_ID;
        Properties props = new Properties();
        int port = 0;
        int controllerPort = 0;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--log-dir" -> logDir = Path.of(value).toAbsolutePath();
                case "--cluster-id" -> clusterId = value;
                case "--port" -> port = Integer.parseInt(value);
                case "--controller-port" -> controllerPort = Integer.parseInt(value);
                // Kafka 4 refuses less than 1 MiB here: a test's own topics set internal.segment.bytes.
                case "--segment-bytes" -> props.setProperty("log.segment.bytes", value);
                case "--roll-ms" -> props.setProperty("log.roll.ms", value);
                case "--flush-messages" -> props.setProperty("log.flush.interval.messages", value);
                case "--flush-ms" -> props.setProperty("log.flush.interval.ms", value);
                case "--set" -> {
                    int eq = value.indexOf('=');
                    props.setProperty(value.substring(0, eq), value.substring(eq + 1));
                }
                default -> throw new IllegalArgumentException("broker: unknown argument " + args[i]);
            }
            i++;
        }
        if (logDir == null) throw new IllegalArgumentException("broker: --log-dir DIR is required");
        // The JSON line must be the only thing on stdout: everything Kafka prints goes to stderr.
        PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);

        // A restart passes the ports of the first start: the endpoints registered in the metadata log
        // stay right (a real broker keeps its listeners), so transaction markers reach it at once.
        if (port == 0) port = freePort();
        if (controllerPort == 0) controllerPort = freePort();
        Properties config = baseConfig(logDir, port, controllerPort);
        config.putAll(props);
        format(config, clusterId);

        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(config, false), Time.SYSTEM);
        Exit.addShutdownHook("broker-shutdown-hook", server::shutdown);
        server.startup();

        ObjectNode ready = new ObjectMapper().createObjectNode();
        ready.put("bootstrap", "127.0.0.1:" + port);
        ready.put("port", port);
        ready.put("controller_port", controllerPort);
        ready.put("log_dir", logDir.toString());
        ready.put("cluster_id", clusterId);
        stdout.println(ready);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.strip().equals("shutdown")) {
            // only "shutdown" (or the end of stdin) means anything
        }
        server.shutdown();
        server.awaitShutdown();
        stdout.println("{\"stopped\": true}");
        Exit.exit(0);
    }

    /** A combined node on loopback with what a one-node cluster needs (replication factors of 1)
     * and short intervals, so that checkpoints and the cleaner run within a test's time. */
    static Properties baseConfig(Path logDir, int port, int controllerPort) {
        Properties p = new Properties();
        p.setProperty("process.roles", "broker,controller");
        p.setProperty("node.id", "1");
        p.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.setProperty("controller.listener.names", "CONTROLLER");
        p.setProperty("inter.broker.listener.name", "PLAINTEXT");
        p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.setProperty("log.dirs", logDir.toString());
        p.setProperty("num.partitions", "1");
        p.setProperty("offsets.topic.replication.factor", "1");
        p.setProperty("offsets.topic.num.partitions", "2");
        p.setProperty("transaction.state.log.replication.factor", "1");
        p.setProperty("transaction.state.log.min.isr", "1");
        p.setProperty("transaction.state.log.num.partitions", "2");
        p.setProperty("group.initial.rebalance.delay.ms", "0");
        // A restarted node waits out its previous incarnation's session before it is unfenced.
        p.setProperty("broker.session.timeout.ms", "2000");
        p.setProperty("broker.heartbeat.interval.ms", "500");
        // A KRaft snapshot (<offset>-<epoch>.checkpoint) within seconds, not after an hour.
        p.setProperty("metadata.log.max.snapshot.interval.ms", "2000");
        p.setProperty("log.cleaner.enable", "true");
        p.setProperty("log.cleaner.backoff.ms", "500");
        p.setProperty("log.cleaner.threads", "1");
        p.setProperty("log.cleaner.dedupe.buffer.size", String.valueOf(8 << 20));
        p.setProperty("log.cleaner.io.buffer.size", String.valueOf(512 << 10));
        p.setProperty("log.flush.offset.checkpoint.interval.ms", "1000");
        p.setProperty("log.flush.start.offset.checkpoint.interval.ms", "1000");
        p.setProperty("replica.high.watermark.checkpoint.interval.ms", "1000");
        p.setProperty("log.retention.check.interval.ms", "1000");
        p.setProperty("file.delete.delay.ms", "1000");
        p.setProperty("producer.id.expiration.check.interval.ms", "1000");
        p.setProperty("transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000");
        p.setProperty("auto.create.topics.enable", "false");
        return p;
    }

    /** kafka-storage format, in-process; a dir formatted before is left as it is. */
    static void format(Properties config, String clusterId) throws IOException {
        Path props = Files.createTempFile("broker", ".properties");
        try {
            StringBuilder text = new StringBuilder();
            for (String name : config.stringPropertyNames()) text.append(name).append('=').append(config.getProperty(name)).append('\n');
            Files.writeString(props, text.toString());
            int status = kafka.tools.StorageTool$.MODULE$.execute(
                new String[] {"format", "-t", clusterId, "-c", props.toString(), "--ignore-formatted"}, System.err);
            if (status != 0) throw new IllegalStateException("kafka-storage format exited with " + status);
        } finally {
            Files.deleteIfExists(props);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
