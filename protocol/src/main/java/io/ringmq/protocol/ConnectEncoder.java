package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes a CONNECT. Reusable; string fields are {@link Slice}s set through the accessors.
 */
public final class ConnectEncoder implements PacketEncoder
{
    private final Slice clientId = new Slice();
    private final Slice willTopic = new Slice();
    private final Slice willPayload = new Slice();
    private final Slice userName = new Slice();
    private final Slice password = new Slice();
    private MqttProperties properties;
    private MqttProperties willProperties;
    private int version = MqttVersion.V3_1_1;
    private boolean cleanStart = true;
    private int keepAlive = 60;
    private boolean will;
    private int willQos;
    private boolean willRetain;

    /**
     * Back to a clean-start MQTT 3.1.1 CONNECT with keep alive 60 s, empty client id, no will, no credentials.
     *
     * @return this.
     */
    public ConnectEncoder reset()
    {
        clientId.reset();
        willTopic.reset();
        willPayload.reset();
        userName.reset();
        password.reset();
        properties = null;
        willProperties = null;
        version = MqttVersion.V3_1_1;
        cleanStart = true;
        keepAlive = 60;
        will = false;
        willQos = 0;
        willRetain = false;
        return this;
    }

    public ConnectEncoder version(final int version)
    {
        this.version = version;
        return this;
    }

    public ConnectEncoder cleanStart(final boolean cleanStart)
    {
        this.cleanStart = cleanStart;
        return this;
    }

    public ConnectEncoder keepAlive(final int seconds)
    {
        this.keepAlive = seconds;
        return this;
    }

    public ConnectEncoder properties(final MqttProperties properties)
    {
        this.properties = properties;
        return this;
    }

    /**
     * Adds a will; the topic and payload are set through {@link #willTopic()} and {@link #willPayload()}.
     *
     * @return this.
     */
    public ConnectEncoder will(final int qos, final boolean retain, final MqttProperties willProperties)
    {
        this.will = true;
        this.willQos = qos;
        this.willRetain = retain;
        this.willProperties = willProperties;
        return this;
    }

    /**
     * @return the client identifier field, to set.
     */
    public Slice clientId()
    {
        return clientId;
    }

    public Slice willTopic()
    {
        return willTopic;
    }

    public Slice willPayload()
    {
        return willPayload;
    }

    /**
     * @return the user name field; present when its slice is.
     */
    public Slice userName()
    {
        return userName;
    }

    /**
     * @return the password field; present when its slice is.
     */
    public Slice password()
    {
        return password;
    }

    public int remainingLength()
    {
        int length = 6 + 1 + 1 + 2 + Fields.sectionLength(version, properties) + 2 + clientId.length();
        if (will)
        {
            length += Fields.sectionLength(version, willProperties) + 4 + willTopic.length() + willPayload.length();
        }
        if (userName.isPresent())
        {
            length += 2 + userName.length();
        }
        if (password.isPresent())
        {
            length += 2 + password.length();
        }
        return length;
    }

    public int encodedLength()
    {
        return Fields.packetLength(remainingLength());
    }

    /**
     * @return bytes written.
     */
    public int encode(final MutableDirectBuffer buffer, final int offset)
    {
        int pos = Fields.putFixedHeader(buffer, offset, PacketType.CONNECT, 0, remainingLength());
        pos = Fields.putUnsignedShort(buffer, pos, 4);
        buffer.putByte(pos++, (byte)'M');
        buffer.putByte(pos++, (byte)'Q');
        buffer.putByte(pos++, (byte)'T');
        buffer.putByte(pos++, (byte)'T');
        buffer.putByte(pos++, (byte)version);
        final int flags = (userName.isPresent() ? 0x80 : 0) | (password.isPresent() ? 0x40 : 0) |
            (will && willRetain ? 0x20 : 0) | (will ? willQos << 3 : 0) | (will ? 0x04 : 0) | (cleanStart ? 0x02 : 0);
        buffer.putByte(pos++, (byte)flags);
        pos = Fields.putUnsignedShort(buffer, pos, keepAlive);
        pos = Fields.putProperties(buffer, pos, version, properties);
        pos = Fields.putSlice(buffer, pos, clientId);
        if (will)
        {
            pos = Fields.putProperties(buffer, pos, version, willProperties);
            pos = Fields.putSlice(buffer, pos, willTopic);
            pos = Fields.putSlice(buffer, pos, willPayload);
        }
        if (userName.isPresent())
        {
            pos = Fields.putSlice(buffer, pos, userName);
        }
        if (password.isPresent())
        {
            pos = Fields.putSlice(buffer, pos, password);
        }
        return pos - offset;
    }
}
