#!/usr/bin/env bash
# The database servers the tests use, started by the project itself (the machines no longer start them):
#   PostgreSQL on 127.0.0.1:5432, user postgres with trust, databases postgres and test;
#   MariaDB    on 127.0.0.1:3306, root without password over TCP.
# Each is left alone when something already answers on its port. As root, a missing server is installed from
# Debian's packages first. Without root nothing can be installed: the script says so, and the tests that need
# the server skip (or fail, under CI=true).
set -uo pipefail

log() { echo "services: $*" >&2; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() {  # port, seconds
  for _ in $(seq 1 "$(( $2 * 4 ))"); do answers "$1" && return 0; sleep 0.25; done
  return 1
}
as_root() { [ "$(id -u)" = 0 ]; }
apt_updated=
apt_install() {
  as_root && command -v apt-get >/dev/null || { log "cannot install $* (not root or no apt-get)"; return 1; }
  if [ -z "$apt_updated" ]; then apt-get update -qq >/dev/null 2>&1; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
}

start_postgres() {
  answers 5432 && return 0
  command -v pg_ctlcluster >/dev/null && [ -n "$(ls /etc/postgresql 2>/dev/null)" ] || apt_install postgresql \
    || return 1
  local version conf
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  conf=/etc/postgresql/$version/main
  [ -d "$conf" ] || pg_createcluster "$version" main >/dev/null || return 1
  # trust on loopback: the tests connect as postgres without a password, as on the machines that started it
  if ! grep -q "cdc-replay tests" "$conf/pg_hba.conf"; then
    sed -i '1i # cdc-replay tests: loopback connections need no password\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' \
      "$conf/pg_hba.conf"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || return 1
  wait_for 5432 30 || return 1
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE test" || return 1
}

start_mariadb() {
  answers 3306 && return 0
  command -v mariadbd >/dev/null || apt_install mariadb-server || return 1
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null || return 1
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- \
    --user=mysql --bind-address=127.0.0.1 --port=3306 || return 1
  wait_for 3306 60 || return 1
  # root over TCP without a password (Debian's root@localhost only takes the unix socket): the tests' user
  mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
                     CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
                     GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
                     CREATE DATABASE IF NOT EXISTS test;" || return 1
}

status=0
start_postgres && log "PostgreSQL answers on 127.0.0.1:5432" || { log "PostgreSQL is not running"; status=1; }
start_mariadb && log "MariaDB answers on 127.0.0.1:3306" || { log "MariaDB is not running"; status=1; }
exit $status
