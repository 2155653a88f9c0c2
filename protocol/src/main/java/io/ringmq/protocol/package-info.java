/**
 * The MQTT 3.1.1 and 5.0 codec. {@link io.ringmq.protocol.FrameDecoder} finds packet boundaries in bytes that
 * arrive in any pieces; the {@code *Flyweight} classes decode and validate one packet in place over an Agrona
 * {@link org.agrona.DirectBuffer}; the {@code *Encoder} classes size a packet and then write it into a
 * {@link org.agrona.MutableDirectBuffer}. Malformed input is a value: decoders return bytes consumed,
 * {@link io.ringmq.protocol.DecodeError#NEED_MORE}, or a negative {@link io.ringmq.protocol.DecodeError} that
 * carries the MQTT 5.0 reason code to answer with. The protocol level is connection state that the caller passes
 * to every call. The PUBLISH path allocates nothing per message.
 */
package io.ringmq.protocol;
