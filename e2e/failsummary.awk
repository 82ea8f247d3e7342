# failsummary.awk: the failed tests of a `go test -v` log, each with the first lines of
# its own messages, printed last so that a CI view that keeps only the head and the tail
# of the output still shows why (a tier's dumps on failure run to hundreds of lines).
# Usage: awk -f e2e/failsummary.awk LOG
function flush_name(line) { sub(/^ *--- FAIL: /, "", line); sub(/ \(.*$/, "", line); return line }
/^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; cont = 0; next }
/^ *--- (PASS|SKIP): / { cont = 0; next }
/^ *--- FAIL: / {
	name = flush_name($0)
	failed[++nfail] = name
	cont = 0
	next
}
# A message's first line: "    file_test.go:NN: text" (deeper for subtests).
/^ +[A-Za-z0-9_.-]+\.go:[0-9]+: / {
	if (cur != "" && nmsg[cur] < 10) { msg[cur, ++nmsg[cur]] = substr($0, 1, 300); cont = 2 } else { cont = 0 }
	next
}
# Up to two continuation lines of the message above.
cont > 0 && /^        / {
	if (nmsg[cur] < 10) msg[cur, ++nmsg[cur]] = substr($0, 1, 300)
	cont--
	next
}
{ cont = 0 }
/^panic: / && npanic < 5 { panics[++npanic] = substr($0, 1, 300) }
/^FAIL\t/ { pkgs[++npkg] = $0 }
END {
	if (nfail == 0 && npanic == 0 && npkg == 0) exit
	print ""
	print "==== failure summary (" FILENAME "): " nfail " failed test(s)"
	for (i = 1; i <= nfail; i++) {
		n = failed[i]
		print "--- FAIL: " n
		for (j = 1; j <= nmsg[n]; j++) print msg[n, j]
	}
	for (i = 1; i <= npanic; i++) print panics[i]
	for (i = 1; i <= npkg; i++) print pkgs[i]
}
