#!/usr/bin/env bash
# Where a process's CPU went, by kind of work: the samples of each `perf record` file (as bench/ab.sh
# writes them with PERF=DIR), summed into a dozen buckets by symbol, with the CPU-seconds they stand
# for at perf's 499 samples a second. A flat profile of a data path is a long tail of symbols of a
# few samples each; summed by kind (AES, copies, the page cache, the network stack, wake-ups, the
# Swift runtime, NIO) two runs and two programs (nearby and socat) can be compared line by line.
#
#   bench/perfcat.sh DIR/*.data
#
# Buckets (k: kernel, u: user space): k:pagecache (writing into tmpfs: the page cache and its page
# allocation), k:copy-user (copies to and from user memory: socket and file reads and writes),
# k:net (TCP/IP, veth, softirqs), k:sched+wake (wake-ups, futexes, epoll, the scheduler), k:fault+mm
# (page faults, mmap), k:other; u:aes, u:sha, u:memcpy, u:malloc, u:swift-rt (libswiftCore and
# Concurrency: retain/release, tasks, casts, metadata), u:nio (NIO's code), u:ssl-other (BoringSSL
# but not its AES), u:nearby (nearby's own code), u:other.
set -euo pipefail
HZ=${HZ:-499}
for f in "$@"; do
    perf report -i "$f" --no-children --sort comm,dso,symbol -g none --stdio -n 2>/dev/null | grep '%' | awk -v name="$(basename "$f" .data)" -v hz="$HZ" '
    {
        n = $2; dso = $4; sym = $6
        for (i = 7; i <= NF; i++) if ($i != "-") sym = sym " " $i
        c = "u:other"
        if (sym ~ /copy_folio_from_iter|shmem_|folio|generic_perform_write|filemap|clear_page|alloc_pages|rmqueue|get_page_from_freelist|lru|memcg/) c = "k:pagecache"
        else if (sym ~ /aes_gcm|gcm_|aesni|aes_hw|ghash/) c = "u:aes"
        else if (sym ~ /sha256|sha1_block|sha512/) c = "u:sha"
        else if (sym ~ /memmove|memcpy/) c = "u:memcpy"
        else if (sym ~ /_copy_to_iter|_copy_from_iter|copy_user|copy_page_to_iter/) c = "k:copy-user"
        else if (sym ~ /tcp|skb|ip_|__dev|net_|napi|veth|netif|sock|inet|nf_|kmem_cache|kmalloc|page_frag|dst_|eth_|xmit|softirq/) c = "k:net"
        else if (sym ~ /futex|schedule|switch|wake|raw_spin|select_task|enqueue|dequeue|update_curr|pick_next|idle|epoll|ep_|eventfd|hrtimer|tick|rcu|load_balance|cpuacct|psi_/) c = "k:sched+wake"
        else if (sym ~ /page_fault|do_user_addr|handle_mm|do_anonymous|mmap|munmap|unmap|zap_|tlb|mprotect|vma/) c = "k:fault+mm"
        else if (dso ~ /kernel/) c = "k:other"
        else if (dso ~ /libswift/ || sym ~ /swift_/) c = "u:swift-rt"
        else if (sym ~ /malloc|free|_int_|arena|tcache/) c = "u:malloc"
        else if (sym ~ /NIO/ && sym !~ /BoringSSL/) c = "u:nio"
        else if (sym ~ /BoringSSL|bssl|ssl_/) c = "u:ssl-other"
        else if (dso ~ /nearby/) c = "u:nearby"
        cat[c] += n; total += n
    }
    END {
        printf "%-22s %5d samples  %.2f CPU-s\n", name, total, total / hz
        for (c in cat) printf "  %-14s %5.1f %%  %.2f s\n", c, 100 * cat[c] / total, cat[c] / hz | "sort -k2,2 -rn"
        close("sort -k2,2 -rn")
    }'
done
