package io.ringmq.loadtest;

/**
 * One run's parameters, as the command line gave them.
 */
final class Settings
{
    String host = "127.0.0.1";
    int port = 1883;
    String user;
    String pass;
    int version = 4;
    String mode = "pubsub";
    int publishers = 10;
    int subscribers = 10;
    int qos;
    int payload = 64;
    int rate;
    long durationNs = 10_000_000_000L;
    int inflight = 32;
    int[] levels = {1000};
    long holdNs = 3_000_000_000L;
    int dialConcurrency = 200;
    int threads = 1;
    int sourceAddresses = 1;
    String topicPrefix = "loadtest";
    long drainNs = 3_000_000_000L;
    int keepAlive = 60;
}
