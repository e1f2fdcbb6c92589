// The file events of a JFR recording, for python/pcstream/record/jvm.py: run as a single-file
// source program by the JDK's own launcher (`java JfrWrites.java RECORDING... DEPTH`: one or
// more recordings, read one after the other), it streams jdk.FileWrite and jdk.FileForce events through the jdk.jfr.consumer API and prints one compact
// text block per event (the format is read_events' in jvm.py). `jfr print --json` gives the same
// facts but prints each frame's class loader, package and module: some 6 kB per event and 0.1 ms
// of printing, where this prints some 200 bytes.
//
// Per event, fields separated by one space, numbers in decimal, text escaped (backslash and
// newline as \\ and \n):
//   E <W|F> <os thread id> <start, ns since the epoch> <duration ns> <bytes> <frames> <has path 0|1> <path>\n
//   then <frames> lines: <line number> <package.Class.method>\n   innermost first, at most DEPTH
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class JfrWrites {
    static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\n", "\\n");
    }

    static void print(RecordedEvent e, boolean force, int depth, StringBuilder b) {
        Instant t = e.getStartTime();
        RecordedThread thread = e.getThread();
        RecordedStackTrace stack = e.getStackTrace();
        List<RecordedFrame> frames = stack == null ? List.of() : stack.getFrames();
        int n = Math.min(depth, frames.size());
        String path = e.getString("path");
        b.append("E ").append(force ? 'F' : 'W').append(' ')
            .append(thread == null ? 0 : thread.getOSThreadId()).append(' ')
            .append(t.getEpochSecond() * 1_000_000_000L + t.getNano()).append(' ')
            .append(e.getDuration().toNanos()).append(' ')
            .append(force ? 1 : e.getLong("bytesWritten")).append(' ')
            .append(n).append(' ')
            .append(path == null ? "0 " : "1 " + escape(path)).append('\n');
        for (int i = 0; i < n; i++) {
            RecordedFrame f = frames.get(i);
            String name = f.getMethod().getType().getName() + "." + f.getMethod().getName();
            b.append(f.getLineNumber()).append(' ').append(escape(name)).append('\n');
        }
    }

    public static void main(String[] args) throws Exception {
        int depth = Integer.parseInt(args[args.length - 1]);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        StringBuilder b = new StringBuilder();
        for (int r = 0; r < args.length - 1; r++) {
            try (RecordingFile recording = new RecordingFile(Path.of(args[r]))) {
                while (recording.hasMoreEvents()) {
                    RecordedEvent e = recording.readEvent();
                    String type = e.getEventType().getName();
                    if (type.equals("jdk.FileWrite") || type.equals("jdk.FileForce")) {
                        b.setLength(0);
                        print(e, type.equals("jdk.FileForce"), depth, b);
                        out.write(b.toString());
                    }
                }
            }
        }
        out.flush();
    }
}
