#!/usr/bin/env python3
"""perf_groups.py OUTDIR: the tables of docs/serve.md's "Where the CPU per request goes" from the
rounds scripts/cpu_per_request.sh left in OUTDIR (OUTDIR/roundN/SERVER.{cpu,stat,perf,client}).

Each perf sample (a stack, leaf first) goes to one group. A user-space leaf goes by its symbol
(the Go runtime; the loop and its driver; the protocol). A kernel sample goes to the first frame,
from the leaf up, that names a part: the scheduler, the Go runtime's own syscalls (futex,
nanosleep, signals, page faults), io_uring, epoll, loopback TCP/IP, syscall entry/exit; generic
frames (locks, slab, memcpy, wake-ups, clocks) go with their caller. A scheduler frame goes by
why the thread switched: a sleep in the event wait (io_cqring_wait, epoll_wait), the Go runtime
(nanosleep, futex), or anything else (a preemption on return to user space: kernel, other)."""
import collections, glob, os, re, statistics, subprocess, sys

SERVERS = ['redis', 'ringev-resp', 'gnet', 'ringev-http']
GROUPS = ['loopback TCP (kernel)', 'syscall entry/exit', "io_uring's own kernel work", "epoll's own kernel work",
          'sleep and wake-up in the event wait', 'Go runtime', 'loop and driver (user)',
          'protocol (parse and reply)', 'kernel, other', 'user, other']

TCP = re.compile(r'^(tcp|__tcp|ip_|__ip|ipv4|inet|__inet|sock|__sock|sk_|__sk_|skb|__skb|kfree_skb|__kfree_skb|consume_skb|'
                 r'napi|__napi|net_|__net|netif|__netif|dev_|__dev|loopback|process_backlog|bbr_|_copy_to_iter|'
                 r'_copy_from_iter|csum|release_sock|lock_sock|__release_sock|raw_v4|nf_|__nf|security_sock|'
                 r'__sys_recvfrom|__sys_sendto|__local_bh_enable|do_softirq|__do_softirq|handle_softirqs|'
                 r'validate_xmit|eth_|neigh|rt_|dst_|fib_|__build_skb|__alloc_skb|alloc_skb|kmalloc_reserve|'
                 r'page_frag|mem_cgroup_charge_skmem|simple_copy_to_iter)')
SCHED = re.compile(r'^(finish_task_switch|__schedule|schedule$|schedule_hrtimeout|schedule_timeout|pick_next|dequeue_|'
                   r'put_prev|set_next_entity|__switch_to|switch_mm|prepare_task_switch|newidle_balance|'
                   r'sched_balance|update_curr|psi_task_switch|psi_group_change)')
GO_SYSCALLS = re.compile(r'^(__x64_sys_futex|do_futex|futex_|__futex|__x64_sys_nanosleep|hrtimer_nanosleep|do_nanosleep|'
                         r'__x64_sys_tgkill|do_tkill|__x64_sys_getpid|__x64_sys_rt_sigreturn|arch_do_signal_or_restart|'
                         r'get_signal|__x64_sys_sched_yield|__x64_sys_madvise|do_madvise|__x64_sys_mmap|'
                         r'__x64_sys_munmap|do_user_addr_fault|handle_mm_fault|exc_page_fault|__x64_sys_rt_sigprocmask|'
                         r'__x64_sys_sigaltstack|__x64_sys_clone)')
IOURING = re.compile(r'^(io_|__io_|__do_sys_io_uring_enter|__x64_sys_io_uring_enter)')
EPOLL = re.compile(r'^(ep_|do_epoll|__x64_sys_epoll|__do_sys_epoll)')
SYSCALL = re.compile(r'^(entry_SYSCALL|syscall_return_via_sysret|do_syscall_64|syscall_exit|exit_to_user_mode|'
                     r'irqentry_exit_to_user_mode|ksys_read|ksys_write|vfs_read|vfs_write|fdget|__fdget|fput|__fget|'
                     r'fget|rw_verify_area|security_file_permission|apparmor_file_permission|bpf_lsm_file_permission|'
                     r'x64_sys_call|__rseq|rseq|srso|clear_bhb|__x64_sys_read$|__x64_sys_write$)')
GO_PROTOCOL_HELPERS = ('memeqbody', 'indexbytebody', 'indexbody', 'cmpbody', 'countbody', 'runtime.memmove',
                       'runtime.memequal', 'runtime.mapaccess2_faststr', 'runtime.mapaccess1_faststr',
                       'runtime.mapaccess1_fast64', 'internal/bytealg.')
REDIS_LOOP = re.compile(r'^(ae|connSocket|conn|readQueryFromClient|writeToClient|_writeToClient|handleClientsWith|'
                        r'beforeSleep|afterSleep|clientInstallWriteHandler|putClientInPendingWriteQueue|'
                        r'clientHasPendingReplies|epoll_wait|read$|__GI___libc_write|write$|__libc_read|'
                        r'whileBlockedCron|updateCachedTime|ustime|mstime|getMonotonicUs|__vdso|clock_gettime|gettimeofday)')


def user_group(sym, dso, prog):
    if sym.startswith(GO_PROTOCOL_HELPERS):
        return 'protocol (parse and reply)'  # searches, copies and map look-ups the protocols make
    if prog == 'redis':
        return 'loop and driver (user)' if REDIS_LOOP.match(sym) or dso == '[vdso]' else 'protocol (parse and reply)'
    if dso == '[vdso]' or sym.startswith(('runtime.', 'internal/runtime/', 'gcWriteBarrier', 'aeshash', 'gogo', 'gosave')):
        return 'syscall entry/exit' if sym.startswith('internal/runtime/syscall') else 'Go runtime'
    if sym.startswith(('syscall.', 'golang.org/x/sys/unix', 'github.com/ringev/ringev/internal/rawsys')):
        return 'syscall entry/exit'
    if sym.startswith(('bytes.', 'strconv.', 'internal/strconv', 'strings.', 'sync/atomic')):
        return 'protocol (parse and reply)'
    if prog == 'ringev':
        if re.match(r'github\.com/ringev/ringev/server\.(\(\*(RESP|HTTP|respParser|Keyspace)\)|parse|line|Echo)', sym):
            return 'protocol (parse and reply)'
        if sym.startswith('github.com/ringev/ringev'):
            return 'loop and driver (user)'
    if prog == 'gnet':
        if sym.startswith('main.'):
            return 'protocol (parse and reply)'
        if sym.startswith('github.com/panjf2000'):
            return 'loop and driver (user)'
    return 'user, other'


def kind(sym):
    for k, rx in (('sched', SCHED), ('go', GO_SYSCALLS), ('iouring', IOURING), ('epoll', EPOLL), ('tcp', TCP), ('syscall', SYSCALL)):
        if rx.match(sym):
            return k
    return None


def classify(stack, prog):
    leaf, dso = stack[0]
    if dso != '[kernel]':
        return user_group(leaf, dso, prog)
    kern = [s for s, d in stack if d == '[kernel]']
    for i, s in enumerate(kern):
        k = kind(s)
        if k == 'sched':
            up = kern[i:]
            if 'io_cqring_wait' in up or any(EPOLL.match(x) for x in up):
                return 'sleep and wake-up in the event wait'
            if any(GO_SYSCALLS.match(x) for x in up):
                return 'Go runtime'
            return 'kernel, other'
        if k:
            return {'go': 'Go runtime', 'iouring': "io_uring's own kernel work", 'epoll': "epoll's own kernel work",
                    'tcp': 'loopback TCP (kernel)', 'syscall': 'syscall entry/exit'}[k]
    return 'kernel, other'


def samples(path):
    out = subprocess.run(['perf', 'script', '-i', path, '-F', 'ip,sym,dso'], capture_output=True, text=True).stdout
    for block in out.split('\n\n'):
        stack = []
        for line in block.splitlines():
            m = re.match(r'\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$', line)
            if m:
                dso = '[kernel]' if m.group(2).endswith('kallsyms]') else m.group(2)
                stack.append((re.sub(r'\+0x[0-9a-f]+$', '', m.group(1)), dso))
        if stack:
            yield stack


def requests(client, n):
    m = re.search(r'(\d+) requests in', client)
    return int(m.group(1)) if m else n


def main(out):
    n = int(re.search(r'^N (\d+)', open(f'{out}/run.txt').read(), re.M).group(1))
    rounds = sorted(glob.glob(f'{out}/round*'))
    print(open(f'{out}/run.txt').read())
    rows = collections.defaultdict(list)
    for r in rounds:
        extra = sorted(os.path.basename(f)[:-4] for f in glob.glob(f'{r}/*.cpu'))
        for s in SERVERS + [x for x in extra if x not in SERVERS]:
            if not os.path.exists(f'{r}/{s}.cpu'):
                continue
            w = open(f'{r}/{s}.cpu').read().split()
            u, k, hz = int(w[1]), int(w[3]), int(w[5])
            client = open(f'{r}/{s}.client').read()
            q = requests(client, n)
            m = re.search(r'([0-9.]+) requests per second|Requests/sec:\s+([0-9.]+)', client)
            rps = float(m.group(1) or m.group(2)) if m else 0
            sc, waits = collections.OrderedDict(), 0
            for line in open(f'{r}/{s}.stat'):
                p = line.strip().split(',')
                if len(p) > 3 and p[0].isdigit():
                    ev = p[2].replace('syscalls:sys_enter_', '')
                    if ev in sc:
                        waits = int(p[0])  # the second io_uring_enter: min_complete > 0
                    else:
                        sc[ev] = int(p[0])
            sq = requests(open(f'{r}/{s}.statclient').read(), n)
            rows[s].append(dict(round=r, rps=rps, us=(u + k) / hz * 1e6 / q, user=u / max(u + k, 1), sc=sc, sq=sq, waits=waits))
    print('| server | requests/s | CPU µs/request | user share (/proc) | syscalls/request | context switches/request |')
    print('|---|---|---|---|---|---|')
    for s, rs in rows.items():
        def per(key):
            return statistics.median(x['sc'].get(key, 0) / x['sq'] for x in rs)
        top = sorted(((per(k), k) for k in rs[0]['sc'] if k not in ('raw_syscalls:sys_enter', 'context-switches')), reverse=True)
        detail = ', '.join('%s %.2f' % (k, v) for v, k in top if v >= 0.005)
        wait = statistics.median(x['waits'] / x['sq'] for x in rs)
        if wait:
            detail += ', of which waiting io_uring_enter %.2f' % wait
        print('| %s | %s | %s (median %.2f) | %s | %.2f (%s) | %.2f |' % (
            s, ', '.join('%.0fk' % (x['rps'] / 1000) for x in rs), ', '.join('%.2f' % x['us'] for x in rs),
            statistics.median(x['us'] for x in rs), ', '.join('%.0f %%' % (100 * x['user']) for x in rs),
            per('raw_syscalls:sys_enter'), detail, per('context-switches')))
    print()
    cpu = {s: statistics.median(x['us'] for x in rs) for s, rs in rows.items()}
    share, userleaf = {}, {}
    for s in rows:
        prog = 'ringev' if s.startswith('ringev') else s
        share[s], tot, ul = collections.Counter(), 0, 0
        for r in rounds:
            c, k = collections.Counter(), 0
            for st in samples(f'{r}/{s}.perf'):
                c[classify(st, prog)] += 1
                k += 1
                ul += st[0][1] != '[kernel]'
            tot += k
            for g in GROUPS:
                share[s][g] += c[g] / max(k, 1) / len(rounds)
        userleaf[s] = ul / max(tot, 1)
    print('| share of the samples (µs/request) | ' + ' | '.join(rows) + ' |')
    print('|---|' + '---|' * len(rows))
    print('| CPU µs/request (median) | ' + ' | '.join('%.2f' % cpu[s] for s in rows) + ' |')
    print('| user space (perf) | ' + ' | '.join('%.0f %%' % (100 * userleaf[s]) for s in rows) + ' |')
    for g in GROUPS:
        print('| %s | ' % g + ' | '.join('%.0f %% (%.2f)' % (100 * share[s][g], share[s][g] * cpu[s]) for s in rows) + ' |')
    print()
    for s, rs in rows.items():  # top 15 of the round with the median CPU per request
        r = sorted(rs, key=lambda x: x['us'])[len(rs) // 2]['round']
        rep = subprocess.run(['perf', 'report', '-i', f'{r}/{s}.perf', '--no-children', '--sort', 'dso,sym', '--stdio',
                              '-g', 'none'], capture_output=True, text=True).stdout
        lines = [l.strip() for l in rep.splitlines() if l.strip() and not l.startswith('#')][:15]
        print(f'{s} ({os.path.basename(r)}): ' + '; '.join(re.sub(r'\s+', ' ', l) for l in lines))
        print()


if __name__ == '__main__':
    main(sys.argv[1])
