// RateLimiter.java - a token-bucket rate limiter keyed by client, with a small demo.
//
// Written for the vsynth tokenizer corpus: Java 17 with records, generics, streams,
// switch expressions, annotations, text blocks and synchronized sections.
package corpus.ratelimit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

public final class RateLimiter {

    /** Bucket settings: capacity in tokens and refill rate in tokens per second. */
    public record Policy(int capacity, double refillPerSecond) {
        public Policy {
            if (capacity <= 0 || refillPerSecond <= 0.0) {
                throw new IllegalArgumentException("capacity and refill must be positive: " + capacity + ", " + refillPerSecond);
            }
        }
    }

    public enum Decision { ALLOW, THROTTLE, REJECT }

    private static final class Bucket {
        private double tokens;
        private Instant last;

        Bucket(double tokens, Instant now) {
            this.tokens = tokens;
            this.last = now;
        }
    }

    private final Policy policy;
    private final Clock clock;
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();

    public RateLimiter(Policy policy, Clock clock) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    public Decision tryAcquire(String client, int cost) {
        if (cost > policy.capacity()) {
            return Decision.REJECT;
        }
        Instant now = clock.instant();
        Bucket b = buckets.computeIfAbsent(client, k -> new Bucket(policy.capacity(), now));
        synchronized (b) {
            double elapsed = Duration.between(b.last, now).toNanos() / 1e9;
            b.tokens = Math.min(policy.capacity(), b.tokens + elapsed * policy.refillPerSecond());
            b.last = now;
            if (b.tokens >= cost) {
                b.tokens -= cost;
                return Decision.ALLOW;
            }
            return Decision.THROTTLE;
        }
    }

    @Override
    public String toString() {
        return buckets.entrySet().stream()
                .map(e -> "%s=%.2f".formatted(e.getKey(), e.getValue().tokens))
                .sorted()
                .collect(Collectors.joining(", ", "RateLimiter{", "}"));
    }

    public static void main(String[] args) {
        RateLimiter limiter = new RateLimiter(new Policy(5, 2.5), Clock.systemUTC());
        Supplier<String> pick = () -> Math.random() < 0.5 ? "alice" : "bob";
        Map<Decision, Long> tally = IntStream.range(0, 40)
                .mapToObj(i -> limiter.tryAcquire(pick.get(), 1 + i % 3))
                .collect(Collectors.groupingBy(d -> d, Collectors.counting()));
        String summary = switch (tally.getOrDefault(Decision.REJECT, 0L).intValue()) {
            case 0 -> "no rejections";
            case 1 -> "one rejection";
            default -> "several rejections";
        };
        String report = """
                Decisions: %s
                Summary:   %s
                State:     %s
                """.formatted(tally, summary, limiter);
        System.out.print(report);
    }
}
