# A private sshd on a lab host, for the benchmarks that run scp beside nearby (transfer.sh,
# faults.sh). Sourced after tests/lab/netlab.sh.
#   lab_sshd K DIR: keys and config in DIR, sshd on host K's address, port 2222 (root, key DIR/user);
#   sets SSHD_PID. SCP_OPTIONS: what scp needs to use it.
lab_sshd() {
    local host=$1 dir=$2 address
    address=$(lab_addr "$host")
    mkdir -p "$dir" /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host" && ssh-keygen -q -t ed25519 -N '' -f "$dir/user"
    cp "$dir/user.pub" "$dir/authorized_keys"
    cat >"$dir/sshd_config" <<CONF
Port 2222
ListenAddress $address
HostKey $dir/host
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
CONF
    lab_bg "$host" "$dir/sshd.log" /usr/sbin/sshd -D -e -f "$dir/sshd_config" >/dev/null
    SSHD_PID=$LAB_PID
    SCP_OPTIONS=(-q -P 2222 -i "$dir/user" -c aes128-gcm@openssh.com -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR)
    sleep 1
}
