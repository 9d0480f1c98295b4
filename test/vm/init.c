// PID 1 of the test VM (test/helpers/vm.ts): a Debian kernel booted by qemu with this as
// its initramfs. It loads the virtio and 9p modules, mounts the host's root read-only over virtio-9p,
// moves it over / as switch_root does (so the kernel's own module loading finds the host's
// modprobe and modules), gives it private /proc, /sys, /dev, /tmp and /run, and runs the script
// named on the kernel command line (palisade.run=PATH) with /bin/sh. The script's exit
// status is printed as "PALISADE-VM-EXIT <n>" and the VM powers off. Nothing of the host
// is writable from inside.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4
#endif

static void load(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // built in, or not needed by this kernel
  int flags = strstr(path, ".ko.") ? MODULE_INIT_COMPRESSED_FILE : 0;
  if (syscall(SYS_finit_module, fd, "", flags) != 0) perror(path);
  close(fd);
}

static void cmdline_script(char* out, size_t len) {
  char buf[4096] = {0};
  int fd = open("/proc/cmdline", O_RDONLY);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n > 0) buf[n] = 0;
    close(fd);
  }
  char* p = strstr(buf, "palisade.run=");
  out[0] = 0;
  if (!p) return;
  p += strlen("palisade.run=");
  size_t i = 0;
  while (p[i] && p[i] != ' ' && p[i] != '\n' && i + 1 < len) {
    out[i] = p[i];
    i++;
  }
  out[i] = 0;
}

static void finish(int status) {
  printf("PALISADE-VM-EXIT %d\n", status);
  fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  for (;;) pause();
}

// A writable /tmp of the guest's own. A checkout under /tmp (a CI clone, say) would be
// hidden by it: that top directory of /tmp stays the host's, bound back on top.
static void private_tmp(const char* script) {
  char top[256] = "";
  if (strncmp(script, "/tmp/", 5) == 0) {
    const char* end = strchr(script + 5, '/');
    size_t n = end ? (size_t)(end - script) : strlen(script);
    if (n < sizeof(top)) memcpy(top, script, n), top[n] = 0;
  }
  if (top[0]) {
    mkdir("/run/palisade-host", 0700);
    if (mount(top, "/run/palisade-host", NULL, MS_BIND, NULL) != 0) perror("palisade-vm: bind the checkout");
  }
  mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
  if (top[0]) {
    mkdir(top, 0755);
    if (mount("/run/palisade-host", top, NULL, MS_MOVE, NULL) != 0) perror("palisade-vm: keep the checkout");
  }
}

int main(void) {
  // The test's boot watchdog waits for this line.
  printf("PALISADE-VM-BOOTED\n");
  fflush(stdout);
  mount("proc", "/proc", "proc", 0, NULL);
  mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
  // The modules the host needs (virtio PCI, 9p over virtio, 9p and what they depend on),
  // one path a line, dependencies first (test/helpers/vm.ts writes the list).
  FILE* order = fopen("/m/order", "r");
  char line[128];
  while (order && fgets(line, sizeof(line), order)) {
    line[strcspn(line, "\n")] = 0;
    if (line[0]) load(line);
  }
  if (order) fclose(order);
  char script[1024];
  cmdline_script(script, sizeof(script));
  if (!script[0]) {
    fprintf(stderr, "palisade-vm: no palisade.run= on the command line\n");
    finish(125);
  }
  if (mount("host", "/host", "9p", MS_RDONLY, "trans=virtio,version=9p2000.L,msize=512000,cache=loose") != 0) {
    perror("palisade-vm: mount host");
    finish(125);
  }
  if (chdir("/host") != 0 || mount("/host", "/", NULL, MS_MOVE, NULL) != 0 || chroot(".") != 0 || chdir("/") != 0) {
    perror("palisade-vm: switch root");
    finish(125);
  }
  mount("proc", "/proc", "proc", 0, NULL);
  mount("sysfs", "/sys", "sysfs", 0, NULL);
  mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
  mount("tmpfs", "/run", "tmpfs", 0, NULL);
  private_tmp(script);
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {"/bin/sh", script, NULL};
    char* envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "LANG=C.UTF-8",
                    NULL};
    execve(argv[0], argv, envp);
    perror("palisade-vm: execve");
    _exit(125);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  finish(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return 0;
}
