package io.ringmq.pipeline;

/**
 * A part of {@link BrokerContext} with settings a reload changes while the broker runs: a reload's context gets its
 * own copy of it ({@link BrokerContext#copy()}), so the running one is never touched.
 *
 * @param <T> the part itself.
 */
abstract class LiveSettings<T extends LiveSettings<T>> implements Cloneable
{
    /**
     * @return a copy of every setting (fields that are parts of their own are shared: none of them is live).
     */
    @SuppressWarnings("unchecked")
    final T copy()
    {
        try
        {
            return (T)clone();
        }
        catch (final CloneNotSupportedException ex)
        {
            throw new IllegalStateException(ex);
        }
    }
}
