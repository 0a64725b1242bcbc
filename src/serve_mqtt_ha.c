/*
 * serve_mqtt_ha.c - Home Assistant's MQTT discovery for mote serve's MQTT
 * front door (conf.mqtt_discovery, docs/MQTT.md): retained configuration
 * messages under DISCOVERY/COMPONENT/NODE/OBJECT/config that make the
 * device's agent appear in Home Assistant - its status, its last answer,
 * the approvals pending, the tokens of the day, the budget left, and a
 * text entity that sends a prompt - and, when discovery is turned off or
 * moved, empty retained messages that remove what an earlier run put
 * there (its prefix and node kept in STATE/mqtt-discovery). The last
 * answer is the retained PREFIX/last.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_mqtt.h"
#include "util.h"

#define MARKER "mqtt-discovery"
#define MARKER_MAX (MOTE_MQTT_TOPIC_MAX + 80)

/* The entities: component, object id, name, and what is particular to
 * each (JSON members, after the common ones). */
static const struct {
    const char *component, *object, *name, *extra;
} entities[] = {
    {"sensor", "status", "Status",
     "\"state_topic\":\"%P/status\",\"value_template\":\"{{ value_json.state }}\","
     "\"json_attributes_topic\":\"%P/status\",\"icon\":\"mdi:robot\""},
    {"sensor", "last_answer", "Last answer",
     "\"state_topic\":\"%P/last\",\"value_template\":\"{{ value_json.text | truncate(250, True) "
     "}}\",\"json_attributes_topic\":\"%P/last\",\"icon\":\"mdi:message-text\"%A"},
    {"sensor", "approvals_pending", "Approvals pending",
     "\"state_topic\":\"%P/approvals\",\"value_template\":\"{{ value_json.count }}\","
     "\"json_attributes_topic\":\"%P/approvals\",\"icon\":\"mdi:help-circle\"%A"},
    {"sensor", "tokens_today", "Tokens today",
     "\"state_topic\":\"%P/stats\",\"value_template\":\"{{ value_json.tokens_today.input + "
     "value_json.tokens_today.output }}\",\"unit_of_measurement\":\"tokens\","
     "\"state_class\":\"total_increasing\",\"icon\":\"mdi:counter\"%A"},
    {"sensor", "budget_left", "Budget left",
     "\"state_topic\":\"%P/stats\",\"value_template\":\"{{ value_json.budget_left_pct }}\","
     "\"unit_of_measurement\":\"%\",\"icon\":\"mdi:cash\"%A"},
    {"text", "prompt", "Prompt",
     "\"command_topic\":\"%P/in\",\"command_template\":\"{{ {'id': 'ha-' ~ ((now().timestamp() "
     "* 1000000) | int), 'conversation': 'home-assistant', 'text': value} | tojson }}\","
     "\"qos\":1,\"retain\":false,\"mode\":\"text\",\"min\":1,\"max\":255,"
     "\"icon\":\"mdi:chat\"%A"},
};

#define NENT (sizeof(entities) / sizeof(entities[0]))

/* The first `n` bytes of `s` at or after `p` (before `end`), or NULL. */
static const char *find(const char *p, const char *end, const char *s, size_t n)
{
    for (; p + n <= end; p++) {
        if (memcmp(p, s, n) == 0)
            return p;
    }
    return NULL;
}

/* The client id as Home Assistant's node id: [A-Za-z0-9_-]. */
static void node_of(const char *id, char *out, size_t cap)
{
    size_t i;

    for (i = 0; id[i] != '\0' && i + 1 < cap; i++) {
        char c = id[i];

        out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                         c == '-'
                     ? c
                     : '_';
    }
    out[i] = '\0';
}

/* DISCOVERY/COMPONENT/NODE/OBJECT/config into q->topic. */
static bool config_topic(struct mq *q, const char *disc, const char *node, unsigned k)
{
    struct mote_sb sb;

    mote_sb_init(&sb, q->topic, sizeof(q->topic));
    mote_sb_join(&sb, disc, "/", entities[k].component);
    mote_sb_join(&sb, "/", node, "/");
    mote_sb_join(&sb, entities[k].object, "/config", NULL);
    return sb.len < sizeof(q->topic) - 1 && mote_mqtt_topic_valid(q->topic);
}

/* Entity k's configuration into q->pay. Returns its length (0: too long). */
static size_t config_of(struct mq *q, const char *node, unsigned k)
{
    struct serve *sv = q->sv;
    struct mote_sb sb;
    const char *x;

    mote_sb_init(&sb, q->pay, sizeof(q->pay));
    mote_sb_join(&sb, "{\"name\":\"", entities[k].name, "\",\"unique_id\":\"mote_");
    mote_sb_join(&sb, node, "_", entities[k].object);
    mote_sb_join(&sb, "\",\"object_id\":\"mote_", node, "_");
    mote_sb_join(&sb, entities[k].object, "\",", NULL);
    for (x = entities[k].extra; *x != '\0'; x++) {
        if (x[0] == '%' && x[1] == 'P') {
            mote_sb_s(&sb, q->prefix); /* (a topic: no quote, no backslash) */
            x++;
        } else if (x[0] == '%' && x[1] == 'A') {
            /* unavailable while mote is away (the will says offline) */
            mote_sb_join(&sb, ",\"availability_topic\":\"", q->prefix,
                         "/status\",\"availability_template\":\"{{ value_json.state }}\","
                         "\"payload_available\":\"online\",\"payload_not_available\":"
                         "\"offline\"");
            x++;
        } else {
            mote_sb_n(&sb, x, 1);
        }
    }
    mote_sb_join(&sb, ",\"device\":{\"identifiers\":[\"mote_", node, "\"],\"name\":\"mote ");
    mote_sb_join(&sb, node, "\",\"model\":\"mote\",\"manufacturer\":\"mote\",\"sw_version\":\"",
                 mote_version());
    mote_sb_s(&sb, "\"}}");
    (void)sv;
    return sb.len < sizeof(q->pay) - 1 ? sb.len : 0;
}

/* What an earlier run announced: "DISCOVERY NODE" from STATE/mqtt-discovery
 * into disc and node ("" when none). */
static void marker_read(struct mq *q, char *disc, char *node)
{
    const struct mote_port *p = q->sv->port;
    char b[MARKER_MAX];
    int h = p->st_open(p->ctx, MARKER, MOTE_ST_READ), n;
    char *sp, *nl;

    disc[0] = node[0] = '\0';
    if (h < 0)
        return;
    n = p->st_read(p->ctx, h, 0, b, sizeof(b) - 1);
    p->st_close(p->ctx, h);
    if (n <= 0)
        return;
    b[n] = '\0';
    nl = strchr(b, '\n');
    sp = strchr(b, ' ');
    if (nl == NULL || sp == NULL || sp > nl)
        return;
    *nl = '\0';
    *sp = '\0';
    mote_str_copy(disc, MOTE_MQTT_TOPIC_MAX + 1, b);
    mote_str_copy(node, MOTE_CONV_ID_MAX * 2, sp + 1);
}

struct marker_src {
    const char *p;
    size_t len, off;
};

static int marker_produce(void *arg, char *buf, size_t cap)
{
    struct marker_src *m = arg;
    size_t n = m->len - m->off < cap ? m->len - m->off : cap;

    memcpy(buf, m->p + m->off, n);
    m->off += n;
    return (int)n;
}

/* One step of the announcements: returns 0 when all went out, or
 * MOTE_ERR_FULL (no room now: again on the kick). */
int mote_serve_mqtt_ha(struct mq *q)
{
    struct serve *sv = q->sv;
    const char *disc = sv->conf.mqtt_discovery;
    char old_disc[MOTE_MQTT_TOPIC_MAX + 1], old_node[MOTE_CONV_ID_MAX * 2];
    char node[MOTE_CONV_ID_MAX * 2];
    bool on = disc != NULL && disc[0] != '\0' && strcmp(disc, "off") != 0;
    unsigned k;
    int rc;

    node_of(sv->conf.mqtt_id, node, sizeof(node));
    if (q->ha_step == 0) {
        /* what an earlier run put elsewhere (or everywhere, if off) goes */
        marker_read(q, old_disc, old_node);
        if (old_disc[0] != '\0' &&
            (!on || strcmp(old_disc, disc) != 0 || strcmp(old_node, node) != 0)) {
            for (k = q->ha_k; k < NENT; k++) {
                if (!config_topic(q, old_disc, old_node, k))
                    continue;
                rc = mote_mqtt_publish(q->client, q->topic, "", 0, 1, true);
                if (rc == MOTE_ERR_FULL) {
                    q->ha_k = k;
                    return rc;
                }
            }
            (void)sv->port->st_remove(sv->port->ctx, MARKER);
            mote_serve_mqtt_say(q, "Home Assistant discovery under ", old_disc,
                                on ? " moved: its entities there are cleared"
                                   : " is off: its entities are cleared");
        }
        q->ha_step = 1;
        q->ha_k = 0;
    }
    if (!on)
        return 0;
    for (k = q->ha_k; k < NENT; k++) {
        size_t n = config_of(q, node, k);

        if (n == 0 || !config_topic(q, disc, node, k)) {
            mote_serve_mqtt_say(q, "Home Assistant discovery: a topic or a configuration "
                                   "under ",
                                disc, " is too long: not announced");
            continue;
        }
        rc = mote_mqtt_publish(q->client, q->topic, q->pay, n, 1, true);
        if (rc == MOTE_ERR_FULL) {
            q->ha_k = k;
            return rc;
        }
    }
    q->ha_k = 0;
    if (!q->ha_marked) {
        char m[MARKER_MAX];
        struct mote_sb sb;
        struct marker_src src;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_join(&sb, disc, " ", node);
        mote_sb_s(&sb, "\n");
        src.p = m;
        src.len = sb.len;
        src.off = 0;
        if (sv->port->st_write_atomic(sv->port->ctx, MARKER, marker_produce, &src) < 0)
            mote_serve_mqtt_say(q, "Home Assistant discovery: STATE/" MARKER
                                   " cannot be written (turning discovery off later will not "
                                   "clear the entities)",
                                NULL, NULL);
        mote_serve_mqtt_say(q, "Home Assistant discovery under ", disc, " announced");
        q->ha_marked = true;
    }
    q->ha_step = 2;
    return 0;
}

void mote_serve_mqtt_last(struct mq *q, const char *id, uint64_t off, const char *line,
                          size_t len)
{
    struct mote_sb sb;
    const char *text;

    /* an answer that ends a turn (no tool call follows) */
    if (len < 16 || memcmp(line, "{\"t\":\"assistant\"", 16) != 0 ||
        find(line, line + len, "\"stop\":\"tool_use\"", 17) != NULL ||
        mote_str_join(q->topic, sizeof(q->topic), q->prefix, "/last", NULL) !=
            strlen(q->prefix) + 5)
        return;
    text = find(line, line + len, ",\"text\":\"", 9);
    mote_sb_init(&sb, q->pay, sizeof(q->pay));
    mote_sb_s(&sb, "{\"conversation\":\"");
    mote_sb_s(&sb, id); /* an id: nothing to escape */
    mote_sb_s(&sb, "\",\"offset\":");
    mote_sb_u(&sb, off);
    if (text != NULL) {
        /* the record's own string, escapes and all (journals hold JSON) */
        const char *s = text + 8, *e = s + 1;

        while (e < line + len && *e != '"')
            e += *e == '\\' ? 2 : 1;
        if (e < line + len && sb.len + (size_t)(e - s) + 40 < sizeof(q->pay)) {
            mote_sb_s(&sb, ",\"text\":");
            mote_sb_n(&sb, s, (size_t)(e - s) + 1);
        } else {
            mote_sb_s(&sb, ",\"text\":\"(longer than a message: read the conversation)\"");
        }
    }
    mote_sb_s(&sb, "}");
    if (sb.len < sizeof(q->pay) - 1)
        (void)mote_mqtt_publish(q->client, q->topic, q->pay, sb.len, 1, true); /* (no room:
                                                                                * the next) */
}
