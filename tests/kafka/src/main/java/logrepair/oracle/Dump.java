package logrepair.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Exit;

/**
 * `dump`: Kafka's own DumpLogSegments (kafka-dump-log) of the pinned release, run in-process.
 *
 * <p>{@code dump FILE... [kafka-dump-log options]} runs it once; {@code dump --jobs} reads one job
 * per stdin line (a JSON array of kafka-dump-log arguments) so that a test dumps many files per JVM
 * start. Each run prints one JSON line: {@code {"stdout", "stderr", "exit", "exception"}}, where
 * stdout and stderr are exactly what kafka-dump-log printed, exit is the status it asked for (0 when
 * it returned) and exception names what it died of (null when it did not; its stack trace is
 * in trace), that being the damage report Kafka gives.
 */
public final class Dump {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Dump() {}

    /** Thrown in place of the JVM exit kafka-dump-log asks for on bad arguments. */
    private static final class ExitRequested extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;

        ExitRequested(int status) {
            super("exit " + status);
            this.status = status;
        }
    }

    public static void run(String[] args) throws Exception {
        Method main = dumpLogSegments();
        Exit.setExitProcedure((status, message) -> {
            throw new ExitRequested(status);
        });
        PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        if (args.length == 1 && args[0].equals("--jobs")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                List<String> job = new ArrayList<>();
                for (JsonNode arg : JSON.readTree(line)) job.add(arg.asText());
                stdout.println(runOnce(main, job.toArray(new String[0])));
            }
        } else {
            stdout.println(runOnce(main, args));
        }
    }

    /** kafka.tools.DumpLogSegments in 4.x; its Java port in org.apache.kafka.tools where it moved. */
    private static Method dumpLogSegments() throws ClassNotFoundException, NoSuchMethodException {
        for (String name : new String[] {"org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"}) {
            try {
                return Class.forName(name).getMethod("main", String[].class);
            } catch (ClassNotFoundException e) {
                // try the next home
            }
        }
        throw new ClassNotFoundException("DumpLogSegments is in neither kafka.tools nor org.apache.kafka.tools");
    }

    private static String runOnce(Method main, String[] args) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
        PrintStream savedOut = System.out;
        PrintStream savedErr = System.err;
        int exit = 0;
        String exception = null;
        String trace = null;
        System.setOut(outStream);
        System.setErr(errStream);
        try {
            // Scala's println writes to scala.Console.out, which System.setOut does not move.
            scala.Console$.MODULE$.withOut(outStream, (scala.Function0<Object>) () ->
                scala.Console$.MODULE$.withErr(errStream, (scala.Function0<Object>) () -> {
                    try {
                        main.invoke(null, (Object) args);
                    } catch (IllegalAccessException e) {
                        throw new IllegalStateException(e);
                    } catch (InvocationTargetException e) {
                        sneakyThrow(e.getCause());
                    }
                    return null;
                }));
        } catch (ExitRequested e) {
            exit = e.status;
        } catch (Throwable t) {
            exit = 1;
            exception = t.getClass().getName() + ": " + t.getMessage();
            StringWriter written = new StringWriter();
            t.printStackTrace(new PrintWriter(written));
            trace = written.toString();
        } finally {
            outStream.flush();
            errStream.flush();
            System.setOut(savedOut);
            System.setErr(savedErr);
        }
        ObjectNode result = JSON.createObjectNode();
        result.put("stdout", out.toString(StandardCharsets.UTF_8));
        result.put("stderr", err.toString(StandardCharsets.UTF_8));
        result.put("exit", exit);
        result.put("exception", exception);
        result.put("trace", trace);
        return JSON.writeValueAsString(result);
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }
}
