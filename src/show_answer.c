/* show_answer.c - the answer a person types to the approval question
 * (mote_show_answer in mote_show.h): yes, always, view, or a no with
 * the text as its reason. */
#include <string.h>

#include "mote/mote_agent.h"
#include "mote/mote_show.h"

/* True when s[0..n) is `word` (lower case) in any case. */
static bool is(const char *s, size_t n, const char *word)
{
    size_t i;

    if (strlen(word) != n)
        return false;
    for (i = 0; i < n; i++) {
        char c = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];

        if (c != word[i])
            return false;
    }
    return true;
}

int mote_show_answer(char *line, bool can_view, const char **reason)
{
    size_t n;

    *reason = NULL;
    line += strspn(line, " \t");
    n = strlen(line);
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        line[--n] = '\0';
    if (can_view && (is(line, n, "v") || is(line, n, "view")))
        return MOTE_SHOW_VIEW;
    if (is(line, n, "y") || is(line, n, "yes"))
        return MOTE_ANSWER_YES;
    if (is(line, n, "a") || is(line, n, "always"))
        return MOTE_ANSWER_ALWAYS;
    if (n > 0 && !is(line, n, "n") && !is(line, n, "no"))
        *reason = line;
    return MOTE_ANSWER_NO;
}
