package io.ringmq.pipeline.persistence;

/**
 * A store could not open, read or write; its message says what and where.
 */
public final class StoreException extends RuntimeException
{
    public StoreException(final String message)
    {
        super(message);
    }

    public StoreException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
