/* The safety net: r.dat is written with write() and with raw system calls no hook sees (inline
 * `syscall` instructions): "hello" (seen), "WORLD!" (raw), "abc" (seen), "wxyz" (raw), then
 * lseek 100 bytes ahead (a hole, not a write), "zz" (seen), close. q.dat gets 9 raw bytes and is
 * replaced by dup2. i.dat is opened read-write, gets 7 raw bytes (not recoverable: its position
 * could move by reads). a.log is appended to: "one" (seen), "two!" (raw), close: its 4 unseen
 * bytes are reported, not recorded (another writer could have appended them). d.dat is read
 * only. Exits 0. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw_write(int fd, const void *b, unsigned long n)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_write), "D"((long)fd), "S"(b), "d"(n) : "rcx", "r11", "memory");
    return r;
}

int main(void)
{
    int fd = open("r.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, "hello", 5) != 5 || raw_write(fd, "WORLD!", 6) != 6 || write(fd, "abc", 3) != 3)
        return 1;
    if (raw_write(fd, "wxyz", 4) != 4 || lseek(fd, 100, SEEK_CUR) != 118 || write(fd, "zz", 2) != 2)
        return 1;
    close(fd);
    int q = open("q.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (raw_write(q, "123456789", 9) != 9)
        return 1;
    int other = open("/dev/null", O_WRONLY);
    dup2(other, q);
    close(q);
    close(other);
    int i = open("i.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (raw_write(i, "1234567", 7) != 7)
        return 1;
    close(i);
    int a = open("a.log", O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0644);
    if (write(a, "one", 3) != 3 || raw_write(a, "two!", 4) != 4)
        return 1;
    close(a);
    char b[4];
    int d = open("r.dat", O_RDONLY);
    if (read(d, b, 4) != 4)
        return 1;
    close(d);
    return 0;
}
