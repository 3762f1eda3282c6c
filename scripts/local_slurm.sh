#!/usr/bin/env bash
# local_slurm.sh - a private single-node SLURM cluster on this machine, to run the pipeline with
# Snakemake's SLURM executor (profiles/slurm; README "Running on a cluster") without a real cluster.
#
#   scripts/local_slurm.sh up      install slurm-wlm + munge with apt if missing (root), write slurm.conf,
#                                  start munged, slurmctld, slurmd; wait until the node is idle
#   scripts/local_slurm.sh down    cancel jobs, stop slurmd, slurmctld, munged (by their pid files)
#   scripts/local_slurm.sh status  daemons, sinfo, squeue (exit 3 when a daemon is stopped)
#   scripts/local_slurm.sh env     print "export SLURM_CONF=..." (eval it before sbatch/snakemake)
#
# Needs root (apt-get, munged as user munge, slurmd). No systemd, no cgroups, no accounting database.
# Everything lives in $LOCAL_SLURM_STATE (default: <repo>/resources/slurm) except the apt packages, the
# munge key (/etc/munge/munge.key, created if missing) and one symlink, /run/slurm/conf -> <state>/conf
# (removed by 'down'): the SLURM jobstep plugin drops every SLURM_* variable (SLURM_CONF included)
# before it calls srun inside a job, so srun must find the config at a default location.
# Exit codes: 0 ok; 1 a daemon or the node failed (see <state>/log); 2 usage;
# 75 this machine cannot host the cluster (not root, packages not installable, ports taken, another
# local cluster is up) - the test suite skips with the message in that case.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCAL_SLURM_STATE=${LOCAL_SLURM_STATE:-$REPO/resources/slurm}
LOCAL_SLURM_PACKAGES=${LOCAL_SLURM_PACKAGES:-"slurm-wlm munge"}
LOCAL_SLURM_NODE=${LOCAL_SLURM_NODE:-$(hostname -s)}
LOCAL_SLURM_ADDR=${LOCAL_SLURM_ADDR:-127.0.0.1}
LOCAL_SLURM_CPUS=${LOCAL_SLURM_CPUS:-$(nproc)}
LOCAL_SLURM_MEM_MB=${LOCAL_SLURM_MEM_MB:-}              # default: RealMemory from `slurmd -C`
LOCAL_SLURM_PARTITION=${LOCAL_SLURM_PARTITION:-local}  # = default-resources.slurm_partition of profiles/slurm
LOCAL_SLURM_CLUSTER=${LOCAL_SLURM_CLUSTER:-localcluster}
LOCAL_SLURM_CTLD_PORT=${LOCAL_SLURM_CTLD_PORT:-6817}
LOCAL_SLURM_SLURMD_PORT=${LOCAL_SLURM_SLURMD_PORT:-6818}
LOCAL_SLURM_MIN_JOB_AGE=${LOCAL_SLURM_MIN_JOB_AGE:-300}  # finished jobs stay visible to squeue (the status command)
LOCAL_SLURM_UP_TIMEOUT=${LOCAL_SLURM_UP_TIMEOUT:-60}
LOCAL_SLURM_DOWN_TIMEOUT=${LOCAL_SLURM_DOWN_TIMEOUT:-30}
LOCAL_SLURM_CONF_LINK=${LOCAL_SLURM_CONF_LINK-/run/slurm/conf}  # empty: no link (then provide /etc/slurm/slurm.conf)
MUNGE_USER=${MUNGE_USER:-munge}
MUNGE_KEY=${MUNGE_KEY:-/etc/munge/munge.key}

CONF_DIR=$LOCAL_SLURM_STATE/conf
CONF=$CONF_DIR/slurm.conf
RUN_DIR=$LOCAL_SLURM_STATE/run
LOG_DIR=$LOCAL_SLURM_STATE/log
CTLD_STATE=$LOCAL_SLURM_STATE/slurmctld
SLURMD_SPOOL=$LOCAL_SLURM_STATE/slurmd
MUNGE_DIR=$LOCAL_SLURM_STATE/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
MUNGED_PID=$MUNGE_DIR/munged.pid
CTLD_PID=$RUN_DIR/slurmctld.pid
SLURMD_PID=$RUN_DIR/slurmd.pid
export SLURM_CONF=$CONF

log() { printf '[local_slurm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
cannot() { log "CANNOT HOST A LOCAL SLURM CLUSTER HERE: $*"; exit 75; }

# process exists and is not a zombie (daemons are reparented to pid 1, which may reap late)
running() {
    local st
    st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [[ -n $st && $st != Z && $st != X ]]
}

# the pid in a pid file, if that process is alive and runs the expected program
alive_pid() { # pidfile comm
    local pid
    [[ -s $1 ]] || return 1
    pid=$(tr -dc 0-9 <"$1")
    [[ -n $pid && -r /proc/$pid/comm ]] || return 1
    [[ $(cat "/proc/$pid/comm") == "$2"* ]] || return 1
    running "$pid" || return 1
    echo "$pid"
}

need_root() { [[ $(id -u) == 0 ]] || cannot "must run as root (apt-get, munged as user '$MUNGE_USER', slurmd)"; }

install_packages() {
    local missing=0 b
    for b in slurmctld slurmd sbatch squeue sinfo scontrol munge unmunge; do
        command -v "$b" >/dev/null 2>&1 || missing=1
    done
    [[ -x /usr/sbin/munged ]] || missing=1
    ((missing)) || return 0
    command -v apt-get >/dev/null 2>&1 || cannot "SLURM is not installed and apt-get is absent (install: $LOCAL_SLURM_PACKAGES)"
    log "installing with apt-get: $LOCAL_SLURM_PACKAGES"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $LOCAL_SLURM_PACKAGES >/dev/null; }; then
        cannot "apt-get install $LOCAL_SLURM_PACKAGES failed (no network or no Debian/Ubuntu archive?)"
    fi
}

port_free() { ! (exec 3<>"/dev/tcp/$LOCAL_SLURM_ADDR/$1") 2>/dev/null; }

ensure_munge_key() {
    if [[ ! -s $MUNGE_KEY ]]; then
        log "creating munge key $MUNGE_KEY"
        mkdir -p "$(dirname "$MUNGE_KEY")"
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile="$MUNGE_KEY" --force
        else
            dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
        fi
    fi
    chown "$MUNGE_USER:$MUNGE_USER" "$(dirname "$MUNGE_KEY")" "$MUNGE_KEY"
    chmod 0700 "$(dirname "$MUNGE_KEY")"
    chmod 0400 "$MUNGE_KEY"
}

# munged refuses a socket below a folder that group or others may write to without the sticky bit
check_state_parents() {
    local d=$LOCAL_SLURM_STATE mode
    while [[ $d != / && -n $d ]]; do
        d=$(dirname "$d")
        [[ -d $d ]] || continue
        mode=$(stat -c %a "$d")
        if (((8#$mode & 8#022) != 0)) && [[ ! -k $d ]]; then
            cannot "$d (a parent of LOCAL_SLURM_STATE=$LOCAL_SLURM_STATE) is writable by group/others without the sticky bit; munged refuses such a path. Choose another LOCAL_SLURM_STATE."
        fi
    done
}

write_conf() {
    local mem=$LOCAL_SLURM_MEM_MB tmp
    if [[ -z $mem ]]; then
        mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
        [[ -n $mem ]] || mem=1000
    fi
    mkdir -p "$CONF_DIR" "$RUN_DIR" "$LOG_DIR" "$CTLD_STATE" "$SLURMD_SPOOL"
    tmp=$(mktemp "$CONF_DIR/.slurm.conf.XXXXXX")
    cat >"$tmp" <<EOF
# generated by scripts/local_slurm.sh - do not edit (rewritten on every 'up')
ClusterName=$LOCAL_SLURM_CLUSTER
SlurmctldHost=$LOCAL_SLURM_NODE($LOCAL_SLURM_ADDR)
SlurmctldPort=$LOCAL_SLURM_CTLD_PORT
SlurmdPort=$LOCAL_SLURM_SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=$LOCAL_SLURM_MIN_JOB_AGE
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
StateSaveLocation=$CTLD_STATE
SlurmdSpoolDir=$SLURMD_SPOOL
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$LOCAL_SLURM_NODE NodeAddr=$LOCAL_SLURM_ADDR CPUs=$LOCAL_SLURM_CPUS RealMemory=$mem State=UNKNOWN
PartitionName=$LOCAL_SLURM_PARTITION Nodes=$LOCAL_SLURM_NODE Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f "$tmp" "$CONF"
    chmod 0644 "$CONF"
}

link_conf() {
    [[ -n $LOCAL_SLURM_CONF_LINK ]] || return 0
    if [[ -L $LOCAL_SLURM_CONF_LINK ]]; then
        local other
        other=$(readlink "$LOCAL_SLURM_CONF_LINK")
        [[ $other == "$CONF_DIR" ]] && return 0
        if [[ -f $other/slurm.conf ]] && pgrep -x slurmctld >/dev/null 2>&1; then
            cannot "$LOCAL_SLURM_CONF_LINK points to $other and a slurmctld is running: another local cluster is up (stop it with its own 'down')"
        fi
        log "re-pointing the stale link $LOCAL_SLURM_CONF_LINK (was -> $other)"
    elif [[ -e $LOCAL_SLURM_CONF_LINK ]]; then
        cannot "$LOCAL_SLURM_CONF_LINK exists and is not a symlink (a configless or system slurmd?)"
    fi
    mkdir -p "$(dirname "$LOCAL_SLURM_CONF_LINK")"
    ln -sfn "$CONF_DIR" "$LOCAL_SLURM_CONF_LINK"
    [[ ! -e /etc/slurm/slurm.conf ]] ||
        log "WARNING: /etc/slurm/slurm.conf exists and shadows $LOCAL_SLURM_CONF_LINK for srun inside jobs"
}

unlink_conf() {
    [[ -n $LOCAL_SLURM_CONF_LINK && -L $LOCAL_SLURM_CONF_LINK ]] || return 0
    [[ $(readlink "$LOCAL_SLURM_CONF_LINK") == "$CONF_DIR" ]] && rm -f "$LOCAL_SLURM_CONF_LINK"
    return 0
}

start_munged() {
    alive_pid "$MUNGED_PID" munged >/dev/null && return 0
    mkdir -p "$MUNGE_DIR"
    chown "$MUNGE_USER:$MUNGE_USER" "$MUNGE_DIR"
    chmod 0755 "$MUNGE_DIR"
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    log "starting munged"
    # 9>&- : the daemons must not inherit the lock file descriptor (they would hold the lock forever)
    runuser -u "$MUNGE_USER" -- /usr/sbin/munged 9>&- \
        --socket="$MUNGE_SOCKET" --pid-file="$MUNGED_PID" \
        --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed" \
        --key-file="$MUNGE_KEY" || die "munged failed to start, see $MUNGE_DIR/munged.log"
    local i
    for ((i = 0; i < 50; i++)); do
        munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "munged does not answer on $MUNGE_SOCKET (see $MUNGE_DIR/munged.log)"
}

start_slurmctld() {
    alive_pid "$CTLD_PID" slurmctld >/dev/null && return 0
    log "starting slurmctld"
    slurmctld -f "$CONF" 9>&- || die "slurmctld failed, see $LOG_DIR/slurmctld.log"
}

start_slurmd() {
    alive_pid "$SLURMD_PID" slurmd >/dev/null && return 0
    log "starting slurmd"
    slurmd -f "$CONF" 9>&- || die "slurmd failed, see $LOG_DIR/slurmd.log"
}

node_state() { sinfo -h -N -n "$LOCAL_SLURM_NODE" -o '%T' 2>/dev/null | head -1; }

wait_idle() {
    local deadline=$((SECONDS + LOCAL_SLURM_UP_TIMEOUT)) st="" resumed=0
    while ((SECONDS < deadline)); do
        st=$(node_state || true)
        case $st in
        idle | mixed | allocated) return 0 ;;
        *drain* | down*)
            if ((!resumed)); then
                scontrol update NodeName="$LOCAL_SLURM_NODE" State=RESUME 2>/dev/null || true
                resumed=1
            fi
            ;;
        esac
        sleep 0.5
    done
    die "node $LOCAL_SLURM_NODE not idle after ${LOCAL_SLURM_UP_TIMEOUT}s (state: '${st:-no answer}'); see $LOG_DIR/"
}

# stop the daemons given as "pidfile:comm": SIGTERM each, wait, SIGKILL what is left
stop_daemons() {
    local item pidf name pid i left
    local -a pids=() files=()
    for item in "$@"; do
        pidf=${item%%:*} name=${item##*:}
        if pid=$(alive_pid "$pidf" "$name"); then
            log "stopping $name (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
        files+=("$pidf")
    done
    for ((i = 0; i < LOCAL_SLURM_DOWN_TIMEOUT * 10; i++)); do
        left=0
        for pid in "${pids[@]}"; do running "$pid" && left=1; done
        ((left)) || break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        if running "$pid"; then
            log "WARNING: pid $pid ignored SIGTERM for ${LOCAL_SLURM_DOWN_TIMEOUT}s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    rm -f "${files[@]}"
}

cmd_up() {
    local t0=$SECONDS p
    install_packages
    check_state_parents
    if ! alive_pid "$CTLD_PID" slurmctld >/dev/null; then
        for p in "$LOCAL_SLURM_CTLD_PORT" "$LOCAL_SLURM_SLURMD_PORT"; do
            port_free "$p" || cannot "port $p on $LOCAL_SLURM_ADDR is in use (another SLURM?); set LOCAL_SLURM_CTLD_PORT / LOCAL_SLURM_SLURMD_PORT"
        done
    fi
    ensure_munge_key
    mkdir -p "$LOCAL_SLURM_STATE"
    runuser -u "$MUNGE_USER" -- test -x "$LOCAL_SLURM_STATE" ||
        die "user $MUNGE_USER (munged) cannot reach LOCAL_SLURM_STATE=$LOCAL_SLURM_STATE: a parent folder is not traversable by others (e.g. mode 0700). Choose a state folder whose parents are all o+x."
    link_conf
    write_conf
    start_munged
    start_slurmctld
    start_slurmd
    wait_idle
    log "up: node $LOCAL_SLURM_NODE $(node_state) in $((SECONDS - t0)) s; SLURM_CONF=$CONF"
}

cmd_down() {
    local t0=$SECONDS i
    if alive_pid "$CTLD_PID" slurmctld >/dev/null && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
        log "cancelling jobs"
        scancel --partition="$LOCAL_SLURM_PARTITION" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            [[ -z $(squeue -h -t RUNNING,PENDING,COMPLETING -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    # slurmd and slurmctld need no munge to shut down: all three in parallel
    stop_daemons "$SLURMD_PID:slurmd" "$CTLD_PID:slurmctld" "$MUNGED_PID:munged"
    unlink_conf
    log "down in $((SECONDS - t0)) s"
}

cmd_status() {
    local name pidf pid rc=0
    for name in munged slurmctld slurmd; do
        case $name in munged) pidf=$MUNGED_PID ;; slurmctld) pidf=$CTLD_PID ;; slurmd) pidf=$SLURMD_PID ;; esac
        if pid=$(alive_pid "$pidf" "$name"); then echo "$name: running (pid $pid)"; else echo "$name: stopped"; rc=3; fi
    done
    echo "SLURM_CONF=$CONF"
    if ((rc == 0)); then sinfo; squeue; fi
    return $rc
}

# serialise concurrent up/down calls on the same state folder
lock() {
    mkdir -p "$LOCAL_SLURM_STATE"
    exec 9>"$LOCAL_SLURM_STATE/.lock"
    flock -w 120 9 || die "another local_slurm.sh holds $LOCAL_SLURM_STATE/.lock"
}

case ${1:-} in
up) need_root; lock; cmd_up ;;
down) need_root; lock; cmd_down ;;
status) cmd_status ;;
env) echo "export SLURM_CONF=$CONF" ;;
*) echo "usage: $0 up|down|status|env   (state: LOCAL_SLURM_STATE=$LOCAL_SLURM_STATE)" >&2; exit 2 ;;
esac
