/* stdio as hardened builds use it (test_record_programs.py builds it with -O2 -D_FORTIFY_SOURCE=2:
 * printf and fprintf become __printf_chk and __fprintf_chk; putc_unlocked and putchar_unlocked
 * are macros that fill the buffer without a call). "out": stdout and stderr, which the caller
 * redirects to files. "files": put.txt through macros and _unlocked calls, wide.txt (wide
 * output, UTF-8), dp.txt (dprintf), fdo.txt (fdopen), over.txt written, then rewritten in place
 * (fseek, rewind; then again through "r+"). "assert": a line to stdout (flushed), then a failed
 * assert (its message to stderr, then abort). Exits 0 (134 for "assert"). */
#define _GNU_SOURCE
#include <assert.h>
#include <error.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

static void out(void)
{
    for (int i = 0; i < 20000; i++) {
        putc_unlocked('a' + i % 26, stdout);
        if (i % 64 == 63)
            putchar_unlocked('\n');
    }
    fputs_unlocked("fputs_unlocked\n", stdout);
    printf("printf %d\n", 42);
    puts("puts");
    fwrite_unlocked("fwrite\n", 1, 7, stdout);
    putchar('!');
    putchar('\n');
    fprintf(stderr, "to stderr %d\n", 1);
    error(0, 0, "error message %d", 7);
    perror("perror");
}

static int rep(FILE *f, char c, int n)
{
    char buf[101];
    memset(buf, c, sizeof buf);
    buf[n < 100 ? n : 100] = 0;
    for (int done = 0; done < n; done += 100)
        if (fputs(buf, f) < 0)
            return 0;
    return 1;
}

static int files(void)
{
    FILE *f = fopen("put.txt", "w");
    for (int i = 0; i < 100000; i++)
        putc_unlocked(i % 80 == 79 ? '\n' : 'p', f);
    fputs_unlocked("fputs_unlocked\n", f);
    fprintf(f, "fprintf %s %d\n", "x", 1);
    fwrite_unlocked("fwrite_unlocked\n", 1, 16, f);
    fputc_unlocked('\n', f);
    fclose(f);

    setlocale(LC_ALL, "C.UTF-8");
    FILE *w = fopen("wide.txt", "w");
    fputws(L"h\u00e9llo w\u00f6rld\n", w);
    fwprintf(w, L"%ls %d\n", L"na\u00efve", 3);
    for (int i = 0; i < 3000; i++)
        fputwc(i % 50 == 49 ? L'\n' : L'\u00e9', w);
    fclose(w);

    int d = open("dp.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++)
        dprintf(d, "%s %d\n", "dprintf", i);
    close(d);

    FILE *g = fdopen(open("fdo.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644), "w");
    for (int i = 0; i < 5000; i++)
        putc_unlocked('f', g);
    fclose(g);

    FILE *o = fopen("over.txt", "w");
    int ok = rep(o, 'a', 10000) && fseek(o, 100, SEEK_SET) == 0 && rep(o, 'b', 50) &&
             fseek(o, 0, SEEK_END) == 0 && rep(o, 'c', 10);
    rewind(o);
    ok = ok && rep(o, 'd', 5) && fclose(o) == 0;
    FILE *p = fopen("over.txt", "r+");
    ok = ok && fseek(p, 5000, SEEK_SET) == 0 && rep(p, 'e', 300) && fclose(p) == 0;
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "out")) {
        out();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "assert")) {
        printf("before the assert\n");
        fflush(stdout); /* abort writes no stdio buffer out */
        assert(argc > 5 && "more arguments");
    }
    return files() ? 0 : 1;
}
