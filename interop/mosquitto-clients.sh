#!/bin/bash
# mosquitto_pub/sub -V 5 against a broker on 127.0.0.1:$1: the main MQTT 5.0 flows, each checked.
P=$1; H="-h 127.0.0.1 -p $P -V 5"; fail=0
ok() { if [ "$2" = "$3" ]; then echo "ok     $1"; else echo "FAILED $1: got [$2] want [$3]"; fail=1; fi; }
# QoS 0/1/2
for q in 0 1 2; do
  timeout 5 mosquitto_sub $H -t m/q$q -q $q -C 1 > /tmp/ms.$q & sleep 0.3
  mosquitto_pub $H -t m/q$q -m "qos$q" -q $q; wait; ok "QoS $q" "$(cat /tmp/ms.$q)" "qos$q"
done
# retained
mosquitto_pub $H -t m/ret -m kept -r -q 1
ok "retained" "$(timeout 5 mosquitto_sub $H -t m/ret -C 1 -F '%r %p')" "1 kept"
mosquitto_pub $H -t m/ret -n -r -q 1
# user property and content type passed through
timeout 5 mosquitto_sub $H -t m/props -C 1 -F '%P|%t' > /tmp/ms.props & sleep 0.3
mosquitto_pub $H -t m/props -m x -D publish user-property k1 v1 -D publish user-property k2 v2; wait
ok "user properties in order" "$(cat /tmp/ms.props)" "k1:v1 k2:v2|m/props"
# will (a client killed)
timeout 8 mosquitto_sub $H -t m/will -C 1 > /tmp/ms.will & sleep 0.3
mosquitto_sub $H -t m/none -i mortal --will-topic m/will --will-payload gone --will-qos 1 & W=$!; sleep 0.5; kill -9 $W; wait $W 2>/dev/null; sleep 0.5
wait %1 2>/dev/null; ok "will" "$(cat /tmp/ms.will)" "gone"
# persistent session: subscribe with expiry, go away, message queued, come back
timeout 3 mosquitto_sub $H -t m/persist -q 1 -i keeper -c -x 60 -W 1 >/dev/null 2>&1
mosquitto_pub $H -t m/persist -m while-away -q 1
ok "persistent session" "$(timeout 5 mosquitto_sub $H -t m/persist -q 1 -i keeper -c -x 60 -C 1)" "while-away"
# shared subscription: two members, 10 messages, each once
timeout 6 mosquitto_sub $H -t '$share/g/m/share' -q 1 > /tmp/ms.a & timeout 6 mosquitto_sub $H -t '$share/g/m/share' -q 1 > /tmp/ms.b & sleep 0.5
for i in $(seq 1 10); do mosquitto_pub $H -t m/share -m n$i -q 1; done; wait
ok "shared subscription" "$(cat /tmp/ms.a /tmp/ms.b | sort | uniq | wc -l) $(cat /tmp/ms.a /tmp/ms.b | wc -l) $([ -s /tmp/ms.a ] && [ -s /tmp/ms.b ] && echo both)" "10 10 both"
# message expiry: one expired while queued, one kept
timeout 3 mosquitto_sub $H -t 'm/exp/#' -q 1 -i expirer -c -x 60 -W 1 >/dev/null 2>&1
mosquitto_pub $H -t m/exp/short -m short -q 1 -D publish message-expiry-interval 1
mosquitto_pub $H -t m/exp/long -m long -q 1 -D publish message-expiry-interval 60; sleep 1.5
ok "message expiry" "$(timeout 3 mosquitto_sub $H -t 'm/exp/#' -q 1 -i expirer -c -x 60 -W 2 2>/dev/null | tr '\n' ' ')" "long "
# topic alias: the publisher aliases (mosquitto_pub -D publish topic-alias)
timeout 5 mosquitto_sub $H -t m/alias -C 3 -F '%t %p' > /tmp/ms.alias & sleep 0.3
printf 'a\nb\nc\n' | mosquitto_pub $H -l -t m/alias -D publish topic-alias 1; wait %1 2>/dev/null
ok "topic alias (set once, then empty topics)" "$(cat /tmp/ms.alias | tr '\n' ' ')" "m/alias a m/alias b m/alias c "
exit $fail
