package io.ringmq.pipeline.session;

/**
 * One subscription of a session: its filter, options and MQTT 5.0 Subscription Identifier. The subscription index
 * holds these, so a match yields the session, its options and its identifier at once; a SUBSCRIBE to a filter the
 * session has already replaces the options of the same object [MQTT-3.8.4-3]. Routing stage only.
 */
public final class Subscription
{
    private final RoutingSession session;
    private final String filter;
    private final String shareName;
    private int options;
    private int subscriptionId;
    private boolean readChecked;

    /**
     * @param shareName the group of a shared subscription ({@code $share/{shareName}/{filter}}), or null.
     */
    public Subscription(final RoutingSession session, final String filter, final String shareName)
    {
        this.session = session;
        this.filter = filter;
        this.shareName = shareName;
    }

    public RoutingSession session()
    {
        return session;
    }

    /**
     * @return the topic filter, without the {@code $share/{name}/} of a shared subscription.
     */
    public String filter()
    {
        return filter;
    }

    /**
     * @return the share name of a shared subscription, or null.
     */
    public String shareName()
    {
        return shareName;
    }

    /**
     * @return the subscription options byte (QoS, no local, retain as published, retain handling).
     */
    public int options()
    {
        return options;
    }

    /**
     * @return the Subscription Identifier, 0 for none.
     */
    public int subscriptionId()
    {
        return subscriptionId;
    }

    public void update(final int options, final int subscriptionId)
    {
        this.options = options;
        this.subscriptionId = subscriptionId;
    }

    /**
     * @return whether each message is checked against the subscriber's ACL before it goes out: the filter is wider
     * than what the subscriber may read (false: all of it may be read, nothing to check).
     */
    public boolean readChecked()
    {
        return readChecked;
    }

    public void readChecked(final boolean readChecked)
    {
        this.readChecked = readChecked;
    }

    public String toString()
    {
        return "Subscription[" + (null == shareName ? "" : "$share/" + shareName + "/") + filter + " of " +
            session + "]";
    }
}
