/**
 * Test support: {@link io.ringmq.transport.junit.RingMqExtension}, a JUnit 5 extension that gives tests an
 * in-process broker. JUnit Jupiter is an optional dependency of ringmq, absent from {@code ringmq.jar}: only code
 * that already has JUnit on its class path loads this package.
 */
package io.ringmq.transport.junit;
