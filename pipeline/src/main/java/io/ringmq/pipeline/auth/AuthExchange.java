package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;

/**
 * One connection's run of an {@link AuthMethod} (MQTT 5.0 section 4.12): created per CONNECT or
 * re-authentication, stepped with the CONNECT's Authentication Data and then with each client AUTH's, and
 * dropped when it ends. Every step answers an MQTT reason code:
 * <ul>
 *   <li>{@link #CONTINUE} (0x18): send the client an AUTH with reason 0x18 carrying {@link #serverData()} and
 *       wait for its next AUTH [MQTT-4.12.0-2];</li>
 *   <li>{@link #SUCCESS} (0x00): the client is {@link #userName()}; {@link #serverData()}, when not null, is the
 *       CONNACK's (or the re-authentication AUTH's) Authentication Data;</li>
 *   <li>0x80 or above: refused with that code (typically 0x86 Bad User Name or Password or 0x87 Not
 *       authorized) [MQTT-4.12.0-4]; the exchange stays failed.</li>
 * </ul>
 * The exchange bounds itself, whatever the method does: at most {@code maxSteps} steps and
 * {@code maxDataLength} bytes of data per step, so a client that keeps sending AUTH, or sends huge data, fails;
 * a step after the end fails; an exception inside the method is a failure, never thrown to the stage. Single
 * threaded: the auth stage's thread owns it.
 */
public abstract class AuthExchange
{
    /** The step succeeded and the exchange is over. */
    public static final int SUCCESS = ReasonCode.SUCCESS;
    /** The server needs another client AUTH: send {@link #serverData()} in an AUTH 0x18. */
    public static final int CONTINUE = ReasonCode.CONTINUE_AUTHENTICATION;

    private static final byte[] NO_DATA = new byte[0];

    private final int maxSteps;
    private final int maxDataLength;
    private int stepCount;
    private int outcome = CONTINUE;
    private byte[] serverData;
    private String userName;

    /**
     * @param maxSteps      the most client data steps (the CONNECT's counts as the first) before the exchange fails.
     * @param maxDataLength the most bytes of client Authentication Data one step may carry.
     */
    protected AuthExchange(final int maxSteps, final int maxDataLength)
    {
        if (maxSteps < 1 || maxDataLength < 0)
        {
            throw new IllegalArgumentException("maxSteps must be positive and maxDataLength not negative");
        }
        this.maxSteps = maxSteps;
        this.maxDataLength = maxDataLength;
    }

    /**
     * Steps with Authentication Data still in a packet; the bytes are copied only once the length is judged.
     *
     * @param buffer the packet, or null when the packet carries no Authentication Data.
     * @return {@link #SUCCESS}, {@link #CONTINUE} or a reason code of 0x80 or above.
     */
    public final int step(final DirectBuffer buffer, final int offset, final int length)
    {
        final int refusal = admit(null == buffer ? 0 : length);
        if (refusal != CONTINUE)
        {
            return refusal; // judged before any copy
        }
        final byte[] data = new byte[null == buffer ? 0 : length];
        if (data.length > 0)
        {
            buffer.getBytes(offset, data);
        }
        return run(data);
    }

    /**
     * @param data the client's Authentication Data, or null when the packet carries none.
     * @return {@link #SUCCESS}, {@link #CONTINUE} or a reason code of 0x80 or above.
     */
    public final int step(final byte[] data)
    {
        final int refusal = admit(null == data ? 0 : data.length);
        return refusal != CONTINUE ? refusal : run(null == data ? NO_DATA : data);
    }

    /**
     * @return {@link #CONTINUE} when a step with this much data may run, else the failure it ends in.
     */
    private int admit(final int length)
    {
        if (outcome != CONTINUE)
        {
            return fail(ReasonCode.NOT_AUTHORIZED); // a step after success or failure: the exchange is over
        }
        if (length < 0 || length > maxDataLength)
        {
            return fail(ReasonCode.NOT_AUTHORIZED);
        }
        if (++stepCount > maxSteps)
        {
            return fail(ReasonCode.NOT_AUTHORIZED); // a client that keeps sending AUTH
        }
        return CONTINUE;
    }

    private int run(final byte[] data)
    {
        int code;
        try
        {
            code = onStep(stepCount, data);
        }
        catch (final RuntimeException ex)
        {
            code = fail(ReasonCode.NOT_AUTHORIZED); // fail closed: nothing a client sends throws out of the stage
        }
        if (code != outcome || (code != SUCCESS && code != CONTINUE && code < ReasonCode.UNSPECIFIED_ERROR))
        {
            code = fail(ReasonCode.NOT_AUTHORIZED); // the method answered without succeed(), proceed() or fail()
        }
        return code;
    }

    /**
     * One step of the method; answer with {@link #proceed}, {@link #succeed} or {@link #fail}.
     *
     * @param step 1 for the CONNECT's data, then 2, 3, ... for each client AUTH.
     * @param data the client's data, empty when absent; at most {@code maxDataLength} bytes.
     */
    protected abstract int onStep(int step, byte[] data);

    /**
     * @param data what the next server AUTH carries as Authentication Data.
     * @return {@link #CONTINUE}.
     */
    protected final int proceed(final byte[] data)
    {
        serverData = data;
        outcome = CONTINUE;
        return CONTINUE;
    }

    /**
     * @param authenticated the user name the client proved.
     * @param data          the Authentication Data of the CONNACK (or of the final AUTH), or null for none.
     * @return {@link #SUCCESS}.
     */
    protected final int succeed(final String authenticated, final byte[] data)
    {
        userName = authenticated;
        serverData = data;
        outcome = SUCCESS;
        return SUCCESS;
    }

    /**
     * @param reasonCode 0x80 or above; anything else becomes 0x87 Not authorized.
     * @return the reason code.
     */
    protected final int fail(final int reasonCode)
    {
        userName = null;
        serverData = null;
        outcome = reasonCode >= ReasonCode.UNSPECIFIED_ERROR && reasonCode <= 0xFF ?
            reasonCode : ReasonCode.NOT_AUTHORIZED;
        return outcome;
    }

    /**
     * @return the last step's answer: {@link #CONTINUE} before the first step and while going on.
     */
    public final int outcome()
    {
        return outcome;
    }

    /**
     * @return whether the exchange has ended, in success or failure.
     */
    public final boolean isDone()
    {
        return outcome != CONTINUE;
    }

    /**
     * @return the server's Authentication Data for the packet the last step answers with, or null for none.
     */
    public final byte[] serverData()
    {
        return serverData;
    }

    /**
     * @return the authenticated user name after {@link #SUCCESS}, else null.
     */
    public final String userName()
    {
        return userName;
    }

    /**
     * @return the client steps taken so far.
     */
    public final int stepCount()
    {
        return stepCount;
    }
}
