# ringmq broker image. Untested: written without access to a container registry from the machine it was written
# on. Build and run:
#
#   docker build -t ringmq .
#   docker run --rm -p 1883:1883 -m 320m --ulimit nofile=65536:65536 ringmq --memory-limit 256m --anonymous all
#
# bin/ringmq sizes the JVM for --memory-limit (default 256m); give the container a little more (-m) than that.
# Anonymous clients are let in from loopback only by default, which inside a container means nobody from
# outside: pass --anonymous all, or --password-file (mount it) for credentials. Persistent sessions and retained
# messages are kept under /var/lib/ringmq/data (a volume: -v ringmq-data:/var/lib/ringmq keeps them across
# containers).

# ---- build: the broker jar, tests skipped (CI runs them) ----
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml ./
COPY protocol protocol
COPY pipeline pipeline
COPY persistence persistence
COPY transport transport
COPY loadtest/pom.xml loadtest/pom.xml
# the reactor lists loadtest; only the broker and what it depends on are built
RUN --mount=type=cache,target=/root/.m2 mvn -B -ntp -q package -DskipTests -pl transport -am

# ---- run: a JRE, the jar and the launcher, as a non-root user ----
FROM eclipse-temurin:17-jre
RUN groupadd --system ringmq \
 && useradd --system --gid ringmq --home-dir /var/lib/ringmq --shell /usr/sbin/nologin ringmq \
 && mkdir -p /var/lib/ringmq /etc/ringmq \
 && chown ringmq:ringmq /var/lib/ringmq
COPY --from=build /src/transport/target/ringmq.jar /opt/ringmq/transport/target/ringmq.jar
COPY bin/ringmq /opt/ringmq/bin/ringmq
RUN chmod 0755 /opt/ringmq/bin/ringmq
ENV RINGMQ_JAR=/opt/ringmq/transport/target/ringmq.jar
WORKDIR /var/lib/ringmq
# the store (--data-dir data, under the working directory): keep it across containers
VOLUME /var/lib/ringmq
USER ringmq
EXPOSE 1883
# exit code 70 is a fatal error inside the broker: let the orchestrator restart it (--restart on-failure)
ENTRYPOINT ["/opt/ringmq/bin/ringmq"]
CMD []
