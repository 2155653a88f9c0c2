package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes and validates a CONNECT. The packet names its own protocol level, so this flyweight needs none; after
 * an {@link DecodeError#UNSUPPORTED_PROTOCOL_VERSION} or {@link DecodeError#PROTOCOL_NAME_INVALID} result,
 * {@link #protocolLevel()} still says what the client asked for, so the broker can refuse in the client's
 * CONNACK format [MQTT-3.1.2-2]. An MQTT 3.1 CONNECT ("MQIsdp", level 3) reads as 3.1.1 ({@link #isV31()} says it
 * was 3.1): the packets the two share are the same, as Mosquitto serves both.
 * <pre>
 *   protocol name "MQTT" (3.1: "MQIsdp") | level | flags | keep alive(2) | [5.0: properties]
 *   client id | [will: [5.0: will properties] will topic, will payload] | [user name] | [password]
 * </pre>
 */
public final class ConnectFlyweight
{
    /** Set on the protocol level byte by a bridge that asks to be treated as one (Mosquitto's try_private). */
    private static final int BRIDGE_BIT = 0x80;
    private static final int CLEAN_START = 0x02;
    private static final int WILL = 0x04;
    private static final int WILL_RETAIN = 0x20;
    private static final int PASSWORD = 0x40;
    private static final int USER_NAME = 0x80;

    private final MqttProperties properties = new MqttProperties();
    private final MqttProperties willProperties = new MqttProperties();
    private final Slice clientId = new Slice();
    private final Slice willTopic = new Slice();
    private final Slice willPayload = new Slice();
    private final Slice userName = new Slice();
    private final Slice password = new Slice();
    private int protocolLevel;
    private boolean v31;
    private boolean bridge;
    private int flags;
    private int keepAlive;

    /**
     * @param buffer holding one complete CONNECT.
     * @param offset of its first byte.
     * @param length of the whole packet.
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length)
    {
        protocolLevel = 0;
        v31 = false;
        bridge = false;
        properties.clear();
        willProperties.clear();
        clientId.reset();
        willTopic.reset();
        willPayload.reset();
        userName.reset();
        password.reset();
        int pos = Fields.checkFixedHeader(buffer, offset, length, PacketType.CONNECT);
        if (pos < 0)
        {
            return pos;
        }
        final int end = offset + length;
        final int nameEnd = Fields.skipUtf8(buffer, pos, end);
        if (nameEnd < 0)
        {
            return nameEnd;
        }
        final int nameLength = nameEnd - pos - 2;
        if (nameEnd + 4 > end)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        protocolLevel = buffer.getByte(nameEnd) & 0xFF;
        if (isName(buffer, pos + 2, nameLength, "MQIsdp"))
        {
            // MQTT 3.1, served as 3.1.1 (bit 7: another broker's 3.1 bridge, Mosquitto's try_private)
            if ((protocolLevel & ~BRIDGE_BIT) != MqttVersion.V3_1)
            {
                return DecodeError.UNSUPPORTED_PROTOCOL_VERSION;
            }
            v31 = true;
            bridge = protocolLevel != MqttVersion.V3_1;
            protocolLevel = MqttVersion.V3_1_1;
        }
        else if (!isName(buffer, pos + 2, nameLength, "MQTT"))
        {
            return DecodeError.PROTOCOL_NAME_INVALID; // [MQTT-3.1.2-1]
        }
        else
        {
            // bit 7 of a 3.1.1 level: another broker's bridge (Mosquitto's try_private), otherwise 3.1.1
            bridge = protocolLevel == (BRIDGE_BIT | MqttVersion.V3_1_1);
            if (bridge)
            {
                protocolLevel = MqttVersion.V3_1_1;
            }
        }
        if (!MqttVersion.isSupported(protocolLevel))
        {
            return DecodeError.UNSUPPORTED_PROTOCOL_VERSION; // [MQTT-3.1.2-2]
        }
        flags = buffer.getByte(nameEnd + 1) & 0xFF;
        keepAlive = Fields.readUnsignedShort(buffer, nameEnd + 2);
        pos = nameEnd + 4;
        final int checked = checkFlags();
        if (checked < 0)
        {
            return checked;
        }
        if (protocolLevel == MqttVersion.V5)
        {
            final int consumed = properties.decode(buffer, pos, end, PacketType.CONNECT);
            if (consumed < 0)
            {
                return consumed;
            }
            pos += consumed;
        }
        pos = readString(buffer, pos, end, clientId, true);
        if (pos < 0)
        {
            return pos;
        }
        if (hasWill())
        {
            if (protocolLevel == MqttVersion.V5)
            {
                final int consumed = willProperties.decode(buffer, pos, end, PropertyId.WILL_CONTEXT);
                if (consumed < 0)
                {
                    return consumed;
                }
                pos += consumed;
            }
            pos = readString(buffer, pos, end, willTopic, true);
            if (pos < 0)
            {
                return pos;
            }
            final int validTopic = Topics.validateName(buffer, willTopic.offset(), willTopic.length());
            if (validTopic < 0)
            {
                return validTopic;
            }
            pos = readString(buffer, pos, end, willPayload, false);
            if (pos < 0)
            {
                return pos;
            }
        }
        if (hasUserName())
        {
            pos = readString(buffer, pos, end, userName, true);
            if (pos < 0)
            {
                return pos;
            }
        }
        if (hasPassword())
        {
            pos = readString(buffer, pos, end, password, false);
            if (pos < 0)
            {
                return pos;
            }
        }
        return pos == end ? length : DecodeError.TRAILING_BYTES;
    }

    private int checkFlags()
    {
        if ((flags & 0x01) != 0)
        {
            return DecodeError.CONNECT_RESERVED_FLAG; // [MQTT-3.1.2-3]
        }
        if (!hasWill() && (willQos() != 0 || isWillRetain()))
        {
            return DecodeError.WILL_FLAGS_WITHOUT_WILL; // [MQTT-3.1.2-13] [MQTT-3.1.2-15]
        }
        if (willQos() == 3)
        {
            return DecodeError.WILL_QOS_INVALID; // [MQTT-3.1.2-14]
        }
        if (protocolLevel == MqttVersion.V3_1_1 && hasPassword() && !hasUserName())
        {
            return DecodeError.PASSWORD_WITHOUT_USERNAME; // [MQTT-3.1.2-22]; MQTT 5.0 allows it
        }
        return 0;
    }

    private static int readString(
        final DirectBuffer buffer, final int pos, final int end, final Slice into, final boolean utf8)
    {
        final int next = utf8 ? Fields.skipUtf8(buffer, pos, end) : Fields.skipBinary(buffer, pos, end);
        if (next >= 0)
        {
            into.wrap(buffer, pos + 2, next - pos - 2);
        }
        return next;
    }

    private static boolean isName(final DirectBuffer buffer, final int offset, final int length, final String name)
    {
        if (length != name.length())
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (buffer.getByte(offset + i) != name.charAt(i))
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @return the protocol level the client asked for: 4 (3.1.1) or 5 (5.0) once decoded (4 for a bridge's 0x84).
     */
    public int protocolLevel()
    {
        return protocolLevel;
    }

    /**
     * @return whether the level was 0x84: 3.1.1 from another broker's bridge, whose subscriptions get No Local and
     * Retain As Published (what it sent is not sent back to it, retained messages stay retained), as in Mosquitto.
     */
    public boolean isBridge()
    {
        return bridge;
    }

    /**
     * @return whether the client spoke MQTT 3.1 ("MQIsdp", level 3): {@link #protocolLevel()} then says 3.1.1.
     */
    public boolean isV31()
    {
        return v31;
    }

    /**
     * @return Clean Session (3.1.1) or Clean Start (5.0).
     */
    public boolean isCleanStart()
    {
        return (flags & CLEAN_START) != 0;
    }

    public boolean hasWill()
    {
        return (flags & WILL) != 0;
    }

    public int willQos()
    {
        return (flags >>> 3) & 0x03;
    }

    public boolean isWillRetain()
    {
        return (flags & WILL_RETAIN) != 0;
    }

    public boolean hasUserName()
    {
        return (flags & USER_NAME) != 0;
    }

    public boolean hasPassword()
    {
        return (flags & PASSWORD) != 0;
    }

    /**
     * @return the keep alive in seconds; 0 turns it off.
     */
    public int keepAlive()
    {
        return keepAlive;
    }

    public MqttProperties properties()
    {
        return properties;
    }

    public MqttProperties willProperties()
    {
        return willProperties;
    }

    /**
     * @return the client identifier; may be empty.
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

    public Slice userName()
    {
        return userName;
    }

    public Slice password()
    {
        return password;
    }
}
