package logrepair.oracle;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Locale;

/**
 * Entry point of the test-only Kafka oracle: {@code Main SUB ARGS...} runs the static
 * {@code run(String[])} of class {@code logrepair.oracle.<Sub>} (recover → Recover, dump → Dump,
 * broker → Broker). Dispatch is by reflection so each subcommand's class is written and compiled on
 * its own. Exit status: what run returns; 2 with one line on stderr for bad usage.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Throwable {
        if (args.length == 0) {
            System.err.println("usage: Main recover|dump|broker ARGS...");
            System.exit(2);
        }
        String sub = args[0];
        String className = "logrepair.oracle." + sub.substring(0, 1).toUpperCase(Locale.ROOT) + sub.substring(1);
        Method run;
        try {
            run = Class.forName(className).getMethod("run", String[].class);
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            System.err.println("unknown subcommand: " + sub);
            System.exit(2);
            return;
        }
        Object status;
        try {
            status = run.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
        System.out.flush();
        System.exit(status instanceof Integer ? (Integer) status : 0);
    }
}
