/* Built statically (test_record.py): writes sw.dat; the shim cannot enter it. */
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
    int fd = open("sw.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    return write(fd, "static", 6) == 6 ? 0 : 1;
}
