/*
 * A random bot for ziggurat's stdio protocol, version 1 (docs/stdio-protocol.md).
 *
 *   cc -O2 -o random_bot random_bot.c
 *   ziggurat bridge --server HOST:PORT --match ID --join me -- ./random_bot
 *
 * The bridge writes one line at a time on stdin; the bot answers on stdout:
 *   ziggurat 1                       -> answer "ready NAME"
 *   game GAME SEATS SEAT [K=V ...]   the game, and which seat is ours
 *   moves FIRST [MOVE ...]           moves played since our last move
 *   position TEXT                    the position as our seat sees it
 *   legal MOVE ...                   the legal moves
 *   go PLY TIME_LEFT_MS              -> answer "move MOVE"
 *   error REASON MESSAGE             our last answer was refused (a new "go" follows)
 *   reveal TEXT / gameover TERMINATION RANK...    the end
 *   quit                             -> exit
 * Anything written to stderr is logged by the bridge, never parsed.
 * Set RANDOM_BOT_SEED to replay the same choices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads one line of any length into *buf (grown as needed); returns 0 at end of input. */
static int read_line(char **buf, size_t *cap)
{
    size_t len = 0;
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        if (len + 1 >= *cap) {
            size_t bigger = *cap ? *cap * 2 : 256;
            char *grown = realloc(*buf, bigger);
            if (grown == NULL) {
                fprintf(stderr, "random_bot: out of memory\n");
                exit(1);
            }
            *buf = grown;
            *cap = bigger;
        }
        (*buf)[len++] = (char)c;
    }
    if (c == EOF && len == 0)
        return 0;
    if (*buf == NULL) { /* an empty first line: make room for the terminator */
        *buf = malloc(1);
        *cap = 1;
        if (*buf == NULL)
            exit(1);
    }
    (*buf)[len] = '\0';
    if (len > 0 && (*buf)[len - 1] == '\r')
        (*buf)[len - 1] = '\0';
    return 1;
}

/* Does line start with the command word `word`? Sets *rest to the fields after it. */
static int is_command(const char *line, const char *word, const char **rest)
{
    size_t n = strlen(word);
    if (strncmp(line, word, n) != 0 || (line[n] != ' ' && line[n] != '\0'))
        return 0;
    *rest = line[n] == ' ' ? line + n + 1 : line + n;
    return 1;
}

int main(void)
{
    char *line = NULL, *legal = NULL;
    size_t cap = 0;
    const char *rest;
    const char *seed = getenv("RANDOM_BOT_SEED");

    srand(seed ? (unsigned)strtoul(seed, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)clock());
    setvbuf(stdout, NULL, _IOLBF, 0); /* every answer leaves at once */

    while (read_line(&line, &cap)) {
        if (is_command(line, "ziggurat", &rest)) {
            if (strcmp(rest, "1") != 0) {
                printf("unsupported %s\n", rest); /* not "ready": the bridge stops */
                return 1;
            }
            printf("ready random-c\n");
        } else if (is_command(line, "legal", &rest)) {
            free(legal);
            legal = malloc(strlen(rest) + 1);
            if (legal == NULL)
                return 1;
            strcpy(legal, rest);
        } else if (is_command(line, "go", &rest)) {
            /* Count the moves, pick one, print it: they are separated by single spaces. */
            size_t count = 1, pick, i;
            const char *move;
            if (legal == NULL || legal[0] == '\0') {
                fprintf(stderr, "random_bot: go without legal moves\n");
                return 1;
            }
            for (i = 0; legal[i] != '\0'; i++)
                count += legal[i] == ' ';
            pick = (size_t)rand() % count;
            move = legal;
            while (pick-- > 0)
                move = strchr(move, ' ') + 1;
            printf("move %.*s\n", (int)strcspn(move, " "), move);
        } else if (is_command(line, "error", &rest)) {
            fprintf(stderr, "random_bot: refused: %s\n", rest);
        } else if (is_command(line, "gameover", &rest)) {
            fprintf(stderr, "random_bot: game over: %s\n", rest);
        } else if (is_command(line, "quit", &rest)) {
            break;
        }
    }
    free(line);
    free(legal);
    return 0;
}
