//! What a hostile or careless client does to `sieve serve`, over raw sockets: pipelined
//! commands, oversized packets before login, more connections than allowed, silence, a process
//! out of file descriptors, password guessing. The server answers each with an error or a closed
//! connection and goes on serving everyone else.

mod common;

use std::time::{Duration, Instant};

use common::prometheus::{rise, scrape};
use common::wire::{
    COM_INIT_DB, COM_PING, COM_QUERY, COM_STMT_CLOSE, COM_STMT_PREPARE, Wire, command, error_code,
    execute_with_bigint, packet,
};
use common::{PASSWORD, Server, free_port, stderr, stdout};

/// A status field of a process (`VmRSS:`, `VmHWM:`), in MiB.
fn status_mib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}

/// Resident memory of a process, in MiB.
fn rss_mib(pid: u32) -> u64 {
    status_mib(pid, "VmRSS:")
}

/// CPU time a process has used (user + system), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn answers_select_42(server: &Server) {
    let out = server.mysql(&["-e", "select 42"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "42");
}

/// Waits (up to 20 s) for the server to answer again.
fn answers_again(server: &Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = server.mysql(&["-e", "select 42"]);
        if out.status.success() {
            return;
        }
        assert!(Instant::now() < deadline, "{}", stderr(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn pipelined_commands_are_each_answered_in_order() {
    let server = Server::start();
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    for round in 0..50 {
        let mut burst = command(COM_QUERY, format!("select {round} + 1").as_bytes());
        burst.extend(command(COM_PING, b""));
        burst.extend(command(COM_QUERY, b"select 'x'"));
        burst.extend(command(COM_QUERY, b"selec broken"));
        burst.extend(command(COM_PING, b""));
        wire.send(&burst).unwrap();
        let rows = wire.reply();
        let row = &rows[rows.len() - 2].1;
        assert_eq!(
            &row[1..],
            (round + 1).to_string().as_bytes(),
            "round {round}"
        );
        assert_eq!(wire.reply()[0].1[0], 0x00, "PING's OK, round {round}");
        let rows = wire.reply();
        assert_eq!(rows[rows.len() - 2].1, b"\x01x");
        assert_eq!(error_code(&wire.reply()[0].1), Some(1064), "round {round}");
        assert_eq!(wire.reply()[0].1[0], 0x00, "PING's OK, round {round}");
    }
}

/// What go-sql-driver/mysql and Connector/J put in one write (CLOSE then PREPARE), and a whole
/// PREPARE, EXECUTE, CLOSE round trip in one write: each command is answered, in order, and
/// every EXECUTE computes from its own parameter.
#[test]
fn pipelined_prepared_statements_are_each_answered_in_order() {
    let server = Server::start();
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    let close = |id: u32| command(COM_STMT_CLOSE, &id.to_le_bytes());
    // Statement ids count up from 1 on a connection, so a pipelining client knows them.
    let mut next_id = 1;
    for round in 0..50i64 {
        let mut burst = command(COM_STMT_PREPARE, b"select ? + 1");
        burst.extend(execute_with_bigint(next_id, round));
        burst.extend(close(next_id));
        burst.extend(command(COM_STMT_PREPARE, b"select ? * 2"));
        burst.extend(execute_with_bigint(next_id + 1, round));
        burst.extend(command(COM_PING, b""));
        wire.send(&burst).unwrap();
        assert_eq!(wire.prepare_ok(), (next_id, 1), "round {round}");
        assert_eq!(wire.binary_bigint(), round + 1, "round {round}");
        assert_eq!(wire.prepare_ok(), (next_id + 1, 1), "round {round}");
        assert_eq!(wire.binary_bigint(), round * 2, "round {round}");
        assert_eq!(wire.reply()[0].1[0], 0x00, "PING's OK, round {round}");
        // The second statement is closed together with the next round's first PREPARE.
        let mut burst = close(next_id + 1);
        burst.extend(command(COM_QUERY, format!("select {round}").as_bytes()));
        wire.send(&burst).unwrap();
        let rows = wire.reply();
        assert_eq!(rows[rows.len() - 2].1[1..], *round.to_string().as_bytes());
        next_id += 2;
    }
    // A closed statement is gone.
    wire.send(&execute_with_bigint(1, 0)).unwrap();
    assert_eq!(error_code(&wire.reply()[0].1), Some(1243));
}

#[test]
fn text_that_is_not_utf8_gets_an_error_and_the_connection_goes_on() {
    let server = Server::start();
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    for kind in [COM_QUERY, COM_STMT_PREPARE, COM_INIT_DB] {
        // Pipelined with a good query, so the answers must also stay in step.
        let mut burst = command(kind, b"select '\xff\xfe'");
        burst.extend(command(COM_QUERY, b"select 'still here'"));
        wire.send(&burst).unwrap();
        let (sequence, reply) = wire.read().unwrap();
        assert_eq!(sequence, 1);
        assert_eq!(error_code(&reply), Some(1300), "command {kind:#x}");
        assert!(String::from_utf8_lossy(&reply).contains("'FFFE27'"));
        let rows = wire.reply();
        assert_eq!(rows[rows.len() - 2].1, b"\x0astill here");
    }
}

#[test]
fn oversized_packets_before_login_are_refused_unbuffered() {
    let server = Server::start();
    let before = rss_mib(server.pid());
    let junk = vec![0x5a; 16 << 20];
    for _ in 0..16 {
        let mut wire = Wire::connect(server.port);
        wire.greeting();
        // A login packet claiming 16 MiB: refused on its header.
        let mut flood = vec![0xff, 0xff, 0xff, 0x01];
        flood.extend_from_slice(&junk);
        let _ = wire.send(&flood); // the server may close before all of it is written
        let (_, reply) = wire.read().expect("an error before the connection closes");
        assert_eq!(error_code(&reply), Some(1153));
        assert!(wire.read().is_none(), "the connection is closed");
    }
    let after = rss_mib(server.pid());
    assert!(after < before + 64, "RSS grew from {before} to {after} MiB");
    answers_select_42(&server);
}

#[test]
fn packets_after_login_are_bounded_by_max_allowed_packet() {
    let server = Server::start_with("max_allowed_packet = 1048576", None);
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    let fits = format!("select length('{}')", "a".repeat(900 << 10));
    wire.send(&command(COM_QUERY, fits.as_bytes())).unwrap();
    let rows = wire.reply();
    assert_eq!(
        &rows[rows.len() - 2].1[1..],
        (900 << 10).to_string().as_bytes()
    );
    let too_big = format!("select length('{}')", "a".repeat(2 << 20));
    let _ = wire.send(&command(COM_QUERY, too_big.as_bytes()));
    let (_, reply) = wire.read().unwrap();
    assert_eq!(error_code(&reply), Some(1153));
    assert!(String::from_utf8_lossy(&reply).contains("max_allowed_packet"));
}

#[test]
fn connections_beyond_the_cap_get_too_many_connections() {
    let server = Server::start_with("max_connections = 4", None);
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut wire = Wire::connect(server.port);
        assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
        held.push(wire);
    }
    let mut refused = Wire::connect(server.port);
    let (_, reply) = refused.login("root", PASSWORD);
    assert_eq!(error_code(&reply), Some(1040));
    drop(held);
    // Slots come back once their connections close.
    answers_again(&server);
}

/// Connections that have not logged in do not count against `max_connections`: 151 that send
/// most of a 16,000-byte login packet and then trickle took every slot, and clients got "Too
/// many connections" until `connect_timeout`. Now they are bounded apart (here 20 per address):
/// beyond the bound a connection is refused with MySQL's 1040 while the pending ones are young,
/// and takes the oldest one's place once it has waited past a real login's time, so a client
/// logs in beside them.
#[test]
fn trickling_logins_do_not_lock_clients_out() {
    let server = Server::start_with("max_pending_logins_per_address = 20", None);
    let header = packet(1, &vec![0; 16_000]);
    let mut tricklers = Vec::new();
    let mut refused = 0;
    for _ in 0..30 {
        let mut wire = Wire::connect(server.port);
        let (_, first) = wire.read().expect("a greeting or an error");
        if error_code(&first) == Some(1040) {
            refused += 1;
            continue;
        }
        wire.send(&header[..8_000]).unwrap();
        tricklers.push(wire);
    }
    assert_eq!((tricklers.len(), refused), (20, 10));
    answers_again(&server);
    // The client took a trickler's place: that one's socket is closed (or reset, the server
    // having left the trickled bytes unread), where an open one only times out.
    let dropped = tricklers
        .into_iter()
        .filter(|wire| {
            let mut stream = &wire.stream;
            stream
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            match std::io::Read::read(&mut stream, &mut [0; 64]) {
                Ok(n) => n == 0,
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        })
        .count();
    assert!(dropped >= 1, "no trickler dropped");
}

/// A connection pool's burst: 256 connections from one address, all connected before any logs
/// in, all log in with the default settings (dropping the oldest pending login at once reset a
/// third of a 64-connection burst). Each closes once logged in: `max_connections` (151) bounds
/// the logged-in ones, not this.
#[test]
fn a_pool_burst_from_one_address_all_logs_in() {
    let server = Server::start();
    let burst: Vec<Wire> = (0..256).map(|_| Wire::connect(server.port)).collect();
    let failed: Vec<usize> = burst
        .into_iter()
        .enumerate()
        .filter_map(|(i, mut wire)| (wire.login("root", PASSWORD).1[0] != 0x00).then_some(i))
        .collect();
    assert!(failed.is_empty(), "logins {failed:?} of 256 failed");
}

#[test]
fn silent_clients_are_disconnected() {
    let server = Server::start_with("connect_timeout = 1\nwait_timeout = 2", None);
    // Connects and never logs in.
    let mut lurker = Wire::connect(server.port);
    lurker.greeting();
    // Logs in a byte at a time, too slowly: the handshake deadline holds for the whole login.
    let mut trickler = Wire::connect(server.port);
    trickler.greeting();
    let mut idle = Wire::connect(server.port);
    assert_eq!(idle.login("root", PASSWORD).1[0], 0x00);
    for byte in packet(1, &[0; 40]).iter().take(3) {
        let _ = trickler.send(&[*byte]);
        std::thread::sleep(Duration::from_millis(400));
    }
    // Each read returns the end of the stream (not the 30 s read timeout).
    assert!(lurker.read().is_none());
    assert!(trickler.read().is_none());
    assert!(idle.read().is_none());
    answers_select_42(&server);
}

#[test]
fn out_of_file_descriptors_the_server_backs_off_and_recovers() {
    let server = Server::start_with("", Some(64));
    let pid = server.pid();
    let (ticks_before, log_before) = (cpu_ticks(pid), server.log().len());
    let sockets: Vec<_> = (0..120)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", server.port)).ok())
        .collect();
    // What is measured is the CPU the server spends over a span of time while descriptors are
    // out (accepted connections time out and free some, so accepting fails and succeeds by
    // turns): the span is the subject here, not a wait for something to happen.
    std::thread::sleep(Duration::from_secs(3));
    let ticks = cpu_ticks(pid) - ticks_before;
    let logged = server.log().len() - log_before;
    // Spinning on accept() would burn the 3 s (300 ticks) and log megabytes.
    assert!(ticks < 100, "{ticks} ticks of CPU while out of descriptors");
    assert!(
        logged < 64 << 10,
        "{logged} bytes of log while out of descriptors"
    );
    drop(sockets);
    answers_again(&server);
}

#[test]
fn failed_logins_from_one_address_are_slowed() {
    let metrics = free_port();
    let server = Server::start_with(&format!("metrics_port = {metrics}"), None);
    const HELD: &str = "sieve_login_delay_seconds_total";
    let before = scrape(metrics);
    for _ in 0..4 {
        let mut wire = Wire::connect(server.port);
        let (_, reply) = wire.login("root", "wrong");
        assert_eq!(reply[0], 0xff, "access denied");
    }
    // Each answer was held back twice as long as the one before: 0.2 + 0.4 + 0.8 + 1.6 s (the
    // throttle's own clock is tested paused in mysql/src/login_throttle.rs).
    let held = rise(&before, &scrape(metrics), HELD);
    assert!((held - 3.0).abs() < 1e-9, "{HELD} rose by {held}");
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    // A success clears the address's record: the next failure is held back 0.2 s again.
    let before = scrape(metrics);
    assert_eq!(Wire::connect(server.port).login("root", "wrong").1[0], 0xff);
    let held = rise(&before, &scrape(metrics), HELD);
    assert!((held - 0.2).abs() < 1e-9, "{HELD} rose by {held}");
}

#[test]
fn nested_values_are_sent_as_json_and_refused_statements_keep_the_connection() {
    let server = Server::start();
    let target = tempfile::tempdir().unwrap();
    let victim = target.path().join("victim.csv");
    std::fs::write(&victim, "precious").unwrap();
    let script = format!(
        "select struct(1, 'a') as s;\ncopy (select 'x' as a) to '{}' stored as csv;\nselect 42;\n",
        victim.display()
    );
    let out = server.mysql_script(&["--force"], &script);
    assert_eq!(
        stdout(&out),
        "{\"c0\":1,\"c1\":\"a\"}\n42\n",
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("ERROR 1235"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

/// Commands a driver would never send like this: each gets MySQL's error, and the connection
/// goes on, in step.
#[test]
fn malformed_commands_get_errors_and_the_connection_goes_on() {
    let server = Server::start();
    let mut wire = Wire::connect(server.port);
    assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
    wire.send(&command(COM_STMT_PREPARE, b"select ? + 1"))
        .unwrap();
    let (id, _) = wire.prepare_ok();
    let whole = execute_with_bigint(id, 41);
    let mut burst = Vec::new();
    // EXECUTE cut short at every length, a bad type byte, an unknown command, COM_STATISTICS.
    for cut in 9..whole.len() {
        let payload = &whole[4..cut];
        burst.extend(common::wire::packet(0, payload));
    }
    burst.extend(command(
        0x17,
        &[&id.to_le_bytes()[..], &[0, 1, 0, 0, 0, 0, 1, 0xf0, 0, 9]].concat(),
    ));
    burst.extend(command(0x60, b"?"));
    burst.extend(command(0x09, b""));
    burst.extend(whole.clone());
    wire.send(&burst).unwrap();
    for cut in 9..whole.len() {
        let reply = wire.reply();
        assert_eq!(
            error_code(&reply[0].1),
            Some(1210),
            "EXECUTE cut at {cut}: {reply:?}"
        );
    }
    assert_eq!(
        error_code(&wire.reply()[0].1),
        Some(1210),
        "a type byte no value has"
    );
    assert_eq!(
        error_code(&wire.reply()[0].1),
        Some(1047),
        "an unknown command"
    );
    let (_, statistics) = wire.read().unwrap();
    assert!(statistics.starts_with(b"Uptime: "), "{statistics:?}");
    assert_eq!(wire.binary_bigint(), 42);
}

/// Two statements that would compute for hours (nested loop joins whose filter keeps almost
/// nothing: one poll of each works through a whole build side) neither keep a newcomer's
/// `select 42` waiting (it waited for them with a query thread per core) nor outlive their
/// clients: closed connections stop their joins, and the server goes back to idle.
#[test]
fn runaway_statements_neither_stall_others_nor_outlive_their_clients() {
    let server = Server::start();
    let pid = server.pid();
    let join = "select count(*) from numbers(200000) a, numbers(200000) b \
                where a.number + b.number = 5";
    let before = cpu_ticks(pid);
    let runaways: Vec<Wire> = (0..2)
        .map(|_| {
            let mut wire = Wire::connect(server.port);
            assert_eq!(wire.login("root", PASSWORD).1[0], 0x00);
            wire.send(&command(COM_QUERY, join.as_bytes())).unwrap();
            wire
        })
        .collect();
    // Both joins compute: the server has used two seconds of CPU since they were sent.
    while cpu_ticks(pid) - before < 200 {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Within the wire's read timeout (30 s), not after the joins.
    let mut newcomer = Wire::connect(server.port);
    assert_eq!(newcomer.login("root", PASSWORD).1[0], 0x00);
    newcomer.send(&command(COM_QUERY, b"select 42")).unwrap();
    let reply = newcomer.reply();
    assert!(
        String::from_utf8_lossy(&reply[reply.len() - 2].1).contains("42"),
        "{reply:?}"
    );
    drop(runaways);
    becomes_idle(pid, "the joins' clients left");
}

/// Waits until the server is idle again: less than a tenth of a core over a second, within a
/// minute of `what` (a runaway statement would compute for hours).
fn becomes_idle(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ticks = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(1));
        if cpu_ticks(pid) - ticks < 10 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server still computes a minute after {what}"
        );
    }
}

/// A statement past its deadline stops computing whatever operators it runs. A cross join
/// makes a batch per build row without polling its input, so the aggregate or TopK above it
/// never yielded: the client had MySQL's timeout error and the server kept two cores busy.
/// Sorts, windows, recursive CTEs, DISTINCT and functions computed per row over an
/// always-ready source stop too. The window's input is small (a sort of 100M rows could run
/// out of its memory budget before the deadline on a fast machine) and its frame is costly:
/// median has no retraction, so every row recomputes over its 10,001 rows. The sort and the
/// DISTINCT likewise hold a million rows at most over a source of two billion.
#[test]
fn a_timed_out_statement_stops_computing_whatever_it_runs() {
    let server = Server::start_with("max_execution_time = 500", None);
    for sql in [
        "select count(*) from numbers(1000000) a cross join numbers(1000000) b",
        "select a.number, b.number from numbers(100000) a cross join numbers(100000) b \
         order by (a.number * b.number) % 1000003 limit 5",
        "select a.number % 7, count(*) from numbers(1000000) a cross join numbers(1000000) b \
         group by a.number % 7",
        "select number from numbers(2000000000) order by (number * 7919) % 1000003 desc, \
         number limit 1 offset 999999",
        "select max(s) from (select median(number) over (order by number rows between 10000 \
         preceding and current row) as s from numbers(1000000)) w",
        "with recursive r(n) as (select 1 union all select n + 1 from r where n < 100000000) \
         select count(*) from r",
        "select count(*) from (select distinct number % 1000003 from numbers(2000000000)) d",
        "select count(*) from numbers(100000000) where length(concat(upper(cast(number as \
         varchar)), lpad(cast(number % 977 as varchar), 12, 'x'), reverse(cast(number as \
         varchar)))) > 100",
    ] {
        let out = server.mysql(&["-e", sql]);
        assert!(
            stderr(&out).contains("maximum statement execution time exceeded"),
            "{sql}: {}",
            stderr(&out)
        );
        becomes_idle(server.pid(), sql);
    }
}

/// Spills go to `spill_dir`, into a directory of the server's own, which a SIGTERM removes;
/// what a killed server left there is removed by the next one to start.
#[test]
fn spill_directories_are_removed_at_shutdown_and_at_start() {
    let spill = tempfile::tempdir().unwrap();
    let left = spill.path().join("sieve-1-0");
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join("spill"), b"rows").unwrap();
    std::fs::write(spill.path().join("sieve-1-0.lock"), b"").unwrap();
    let config = format!(
        "spill_dir = '{}'\nspill_limit_gib = 1",
        spill.path().display()
    );
    let mut server = Server::start_with(&config, None);
    answers_select_42(&server);
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(spill.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    // `sieve-<pid>-<n>` and its lock.
    let own = listing()[0].clone();
    assert!(
        own.starts_with(&format!("sieve-{}-", server.pid())),
        "{own}"
    );
    assert_eq!(listing(), [own.clone(), format!("{own}.lock")]);
    assert!(server.terminate().success());
    assert_eq!(listing(), Vec::<String>::new());
}

/// SHOW PROCESSLIST and information_schema.PROCESSLIST list every connection of the server
/// (SHOW listed only the asking one): from one connection another's running statement (MySQL's
/// SLEEP, which holds it open) is seen, with its id for KILL QUERY, which stops it with MySQL's
/// 1317; the connection then sleeps, still listed.
#[test]
fn show_processlist_shows_other_connections_and_their_statements() {
    let server = Server::start();
    let join = "select sleep(600)";
    let mut runner = Wire::connect(server.port);
    assert_eq!(runner.login("root", PASSWORD).1[0], 0x00);
    runner.send(&command(COM_QUERY, join.as_bytes())).unwrap();
    let listed = |wanted: &dyn Fn(&str) -> bool| -> Option<Vec<String>> {
        let out = server.mysql(&["-e", "show full processlist"]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .find(|l| wanted(l))
            .map(|l| l.split('\t').map(str::to_string).collect())
    };
    // Waits for the statement to show (it is listed from the moment it starts).
    let deadline = Instant::now() + Duration::from_secs(60);
    let row = loop {
        if let Some(row) = listed(&|l| l.contains("sleep(600)")) {
            break row;
        }
        assert!(
            Instant::now() < deadline,
            "the sleep never showed in SHOW PROCESSLIST"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Id, User, Host, db, Command, Time, State, Info.
    assert_eq!(
        (
            &row[1][..],
            &row[2][..],
            &row[3][..],
            &row[4][..],
            &row[7][..]
        ),
        ("root", "127.0.0.1", "default", "Query", join)
    );
    // The same row in information_schema, with the asking connection's own.
    let out = server.mysql(&[
        "-e",
        "select id, user, command, info from information_schema.processlist order by info",
    ]);
    let listing = stdout(&out);
    // (A listing client that has not finished closing may show too: rows are looked for.)
    let sleeping = format!("{}\troot\tQuery\t{join}", row[0]);
    assert!(
        listing.lines().any(|l| l == sleeping),
        "{listing}{}",
        stderr(&out)
    );
    assert!(
        listing.lines().any(|l| l.ends_with(
            "select id, user, command, info from information_schema.processlist order by info"
        )),
        "{listing}"
    );
    let out = server.mysql(&["-e", &format!("kill query {}", row[0])]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, reply) = runner.read().expect("an answer to the killed statement");
    assert_eq!(error_code(&reply), Some(1317));
    let id = format!("{}\t", row[0]);
    let row = listed(&|l| l.starts_with(&id)).expect("the connection is still listed");
    assert_eq!(row[4], "Sleep");
}

/// Issue 53.2: `string_agg` and `array_agg` over more than a query's budget fail with 1041, or
/// spill until their deadline (1317), while the server stays within its whole budget + 512 MiB
/// (the issue's bound), here 768 MiB. In DataFusion's two stages (`sieve.one_stage_collect =
/// false`) these statements took a server with these budgets to 2.0 and 2.3 GiB; in one stage
/// to 0.46 and 0.53 GiB (a debug build, `SIEVE_BENCH_QUERY_MIB=64 SIEVE_BENCH_SERVER_MIB=256
/// SIEVE_BENCH_SCALE=4 scripts/bench-budgets.sh`). A fresh server each, so that what glibc kept
/// from one statement does not count in the next one's peak.
#[test]
fn collecting_aggregates_over_their_budget_keep_the_server_in_its_own() {
    for sql in [
        "select g, length(string_agg(repeat('x', 1000), ',')) \
         from (select number % 10 as g from numbers(1000000)) s group by g",
        "select count(*) from (select number % 10 as g, array_agg(number) as a \
         from numbers(75000000) group by g) s where a is not null",
    ] {
        let server =
            Server::start_with("query_memory_limit_mib = 64\nmemory_limit_mib = 256", None);
        answers_select_42(&server);
        let out = server.mysql(&["-e", &format!("set max_execution_time = 15000; {sql}")]);
        let error = stderr(&out);
        assert!(
            error.contains("ERROR 1041") || error.contains("ERROR 1317"),
            "{sql}: {error}"
        );
        let peak = status_mib(server.pid(), "VmHWM:");
        assert!(peak <= 256 + 512, "{sql}: the server reached {peak} MiB");
        answers_select_42(&server);
    }
}

#[test]
fn memory_a_statement_freed_is_returned_to_the_system() {
    let server = Server::start();
    answers_select_42(&server);
    let before = rss_mib(server.pid());
    // 20,000 distinct 5 KB strings: hundreds of MiB while it runs, nothing kept after.
    let out = server.mysql(&[
        "-e",
        "select count(distinct repeat(cast(number as varchar), 5000)) from numbers(20000)",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "20000");
    let peak = status_mib(server.pid(), "VmHWM:");
    assert!(
        peak > before + 300,
        "the statement should have grown the server: {before} to {peak} MiB"
    );
    // glibc kept what it freed (1,075 MiB of 1.65 GB here); the server's trim thread returns it.
    // At least three quarters of the growth must go back: a fixed 160 MiB left was missed by 3
    // on a CI run (236 MiB resident against 73 before, of a 934 MiB peak), since what stays
    // with the arenas' live pages varies with the run.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = rss_mib(server.pid());
        if now < before + (peak - before) / 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {now} MiB resident 20 s after the statement (before it {before}, peak {peak})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    answers_select_42(&server);
}
