/* stdio: fprintf, fputs, fputc, fwrite to one FILE; glibc writes them with internal calls, so the
 * shim records them at the stdio call (flags bit 0). Prints "stdio ok" to stdout. */
#include <stdio.h>

int main(void)
{
    FILE *f = fopen("f.txt", "w");
    fprintf(f, "n=%d\n", 42);
    fputs("line\n", f);
    fputc('c', f);
    fwrite("0123456789", 1, 10, f);
    fclose(f);
    printf("stdio ok\n");
    return 0;
}
