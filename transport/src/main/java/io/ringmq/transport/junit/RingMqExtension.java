package io.ringmq.transport.junit;

import io.ringmq.transport.RingMq;
import io.ringmq.transport.RingMqBuilder;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * A JUnit 5 extension that gives tests a fresh ringmq broker on 127.0.0.1 and a free port, and resolves
 * {@link RingMq} parameters of test methods and of {@code @BeforeEach} / {@code @AfterEach} methods to it:
 * <pre>{@code
 * @ExtendWith(RingMqExtension.class)                 // a fresh broker for every test
 * class MyTest
 * {
 *     @Test
 *     void publishes(final RingMq broker) throws Exception
 *     {
 *         MqttClient client = new MqttClient(broker.uri(), "c1", new MemoryPersistence());
 *     }
 * }
 *
 * class MyOtherTest
 * {
 *     @RegisterExtension                              // static: one broker for the whole class, with options
 *     static final RingMqExtension BROKER = new RingMqExtension(() -> RingMq.builder().user("u", "p")).perClass();
 * }
 * }</pre>
 * After each test the broker is closed (per test) and the test fails when the broker counted an unexpected error
 * ({@link io.ringmq.pipeline.status.BrokerCounters#UNEXPECTED_ERRORS}) during it, with the errors in the message;
 * {@link #allowingUnexpectedErrors()} turns that check off. A class-wide broker is closed after the class, and
 * each test still fails for the errors counted while it ran.
 * <p>
 * JUnit Jupiter is an optional dependency of ringmq: a project that uses this extension has JUnit already.
 */
public final class RingMqExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
    AfterEachCallback, ParameterResolver
{
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(RingMqExtension.class);
    private static final String BROKER = "broker";
    /** Per test: the broker's unexpected errors when the test began. */
    private static final String ERRORS_BEFORE = "errors-before";
    /** Per class: the unexpected errors some test has answered for already. */
    private static final String ERRORS_CHECKED = "errors-checked";

    private final Supplier<RingMqBuilder> builder;
    private final boolean perClass;
    private final boolean checkErrors;

    /**
     * An extension that starts each broker from {@link RingMq#builder()}'s defaults, one per test.
     */
    public RingMqExtension()
    {
        this(RingMq::builder, false, true);
    }

    /**
     * @param builder makes the builder of each broker, e.g. {@code () -> RingMq.builder().user("u", "p")}.
     */
    public RingMqExtension(final Supplier<RingMqBuilder> builder)
    {
        this(builder, false, true);
    }

    private RingMqExtension(final Supplier<RingMqBuilder> builder, final boolean perClass, final boolean checkErrors)
    {
        this.builder = Objects.requireNonNull(builder, "builder");
        this.perClass = perClass;
        this.checkErrors = checkErrors;
    }

    /**
     * @return an extension that starts one broker before all tests of the class and closes it after them; it must
     *         be registered on a {@code static} field (or with {@code @ExtendWith} on the class).
     */
    public RingMqExtension perClass()
    {
        return new RingMqExtension(builder, true, checkErrors);
    }

    /**
     * @return an extension that does not fail a test for the unexpected errors the broker counted, for tests that
     *         provoke them on purpose.
     */
    public RingMqExtension allowingUnexpectedErrors()
    {
        return new RingMqExtension(builder, perClass, false);
    }

    public void beforeAll(final ExtensionContext context)
    {
        if (perClass)
        {
            final ExtensionContext.Store store = context.getStore(NAMESPACE);
            store.put(BROKER, start());
            store.put(ERRORS_CHECKED, new AtomicLong());
        }
    }

    public void beforeEach(final ExtensionContext context)
    {
        final ExtensionContext.Store store = context.getStore(NAMESPACE);
        if (!perClass)
        {
            store.put(BROKER, start());
        }
        else if (null == store.get(BROKER, RingMq.class))
        {
            throw new ExtensionConfigurationException("RingMqExtension.perClass() starts its broker before all " +
                "tests: register it on a static field");
        }
        store.put(ERRORS_BEFORE, store.get(BROKER, RingMq.class).unexpectedErrors());
    }

    public void afterEach(final ExtensionContext context)
    {
        final ExtensionContext.Store store = context.getStore(NAMESPACE);
        final Long before = store.remove(ERRORS_BEFORE, Long.class);
        final RingMq broker = perClass ? store.get(BROKER, RingMq.class) : store.remove(BROKER, RingMq.class);
        if (null == broker)
        {
            return;
        }
        if (!perClass)
        {
            broker.close();
        }
        else
        {
            store.get(ERRORS_CHECKED, AtomicLong.class).set(broker.unexpectedErrors());
        }
        check(broker, null == before ? 0 : before, "this test");
    }

    public void afterAll(final ExtensionContext context)
    {
        if (perClass)
        {
            final ExtensionContext.Store store = context.getStore(NAMESPACE);
            final RingMq broker = store.remove(BROKER, RingMq.class);
            final AtomicLong checked = store.remove(ERRORS_CHECKED, AtomicLong.class);
            if (null != broker)
            {
                broker.close();
                // errors counted while a test ran have failed that test already
                check(broker, null == checked ? 0 : checked.get(), "the tests' set-up, tear-down or close");
            }
        }
    }

    public boolean supportsParameter(final ParameterContext parameter, final ExtensionContext context)
    {
        return parameter.getParameter().getType() == RingMq.class;
    }

    public Object resolveParameter(final ParameterContext parameter, final ExtensionContext context)
    {
        final RingMq broker = context.getStore(NAMESPACE).get(BROKER, RingMq.class);
        if (null == broker)
        {
            throw new ParameterResolutionException("no ringmq broker for " + parameter.getDeclaringExecutable() +
                ": a per-test RingMqExtension gives one to @Test, @BeforeEach and @AfterEach methods only; use " +
                "perClass() for @BeforeAll and constructors");
        }
        return broker;
    }

    private RingMq start()
    {
        return Objects.requireNonNull(builder.get(), "RingMqExtension's builder supplier returned null").start();
    }

    private void check(final RingMq broker, final long before, final String during)
    {
        final long errors = broker.unexpectedErrors() - before;
        if (checkErrors && errors > 0)
        {
            final List<String> distinct = broker.errors();
            throw new AssertionError("the ringmq broker on " + broker.uri() + " counted " + errors +
                " unexpected error(s) during " + during + ":\n" + String.join("\n", distinct));
        }
    }
}
