#!/usr/bin/env bash
# `ktrain completion`: the bash script parses, and sourced in bash it completes verbs,
# a verb's flags, file names after -f and the values of -o; zsh and fish scripts are
# syntax-checked when those shells are installed.
set -euo pipefail
: "${KTRAIN_BUILD:?set KTRAIN_BUILD to the build folder}"
ktrain="$KTRAIN_BUILD/ktrain"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ktrain" completion bash >"$work/ktrain.bash"
"$ktrain" completion zsh >"$work/_ktrain"
"$ktrain" completion fish >"$work/ktrain.fish"
bash -n "$work/ktrain.bash" || fail "bash -n rejects the bash script"

# complete WORD...: the words of the command line, the last being completed; prints
# COMPREPLY one per line.
complete_words() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    _ktrain ktrain "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    if (( ${#COMPREPLY[@]} )); then printf "%s\n" "${COMPREPLY[@]}"; fi
  ' complete "$work/ktrain.bash" "$@"
}
expect_words() {  # expect_words "WANT" WORD...: COMPREPLY, sorted, is exactly WANT
  local want=$1; shift
  local got
  got=$(complete_words "$@" | sort | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "completing '$*': got '$got', expected '$want'"
}
expect_has() {  # expect_has WANT WORD...: COMPREPLY contains WANT
  local want=$1; shift
  local got
  got=$(complete_words "$@")
  grep -qx -- "$want" <<<"$got" || fail "completing '$*': no '$want' in: $(tr '\n' ' ' <<<"$got")"
}

expect_words "submit" ktrain sub
expect_has submit ktrain ""
expect_has completion ktrain ""
! grep -q keeper <<<"$(complete_words ktrain "")" || fail "the hidden __keeper verb is offered"
expect_words "submit" ktrain su
expect_words "scale schema serve setup status stop submit" ktrain s
expect_words "schema" ktrain sch
expect_has --follow ktrain submit --fo
expect_has --wait ktrain submit --w
expect_has --kubeconfig ktrain submit --kube
expect_has --all-namespaces ktrain list --all
expect_words "--follow" ktrain logs --foll
expect_has submit ktrain -n team sub
expect_words "json" ktrain list -o js
expect_words "bash" ktrain completion ba
# Flags that take one of a few values complete them (the same values --help shows).
expect_words "client none server" ktrain submit --dry-run ""
expect_words "none server" ktrain serve --dry-run ""
expect_words "paddle pytorch" ktrain init --framework p
expect_words "gzip zstd" ktrain build --compression ""
expect_words "yaml" ktrain status -o y
expect_words "json" ktrain -o j
"$ktrain" submit --help | grep -q -- "--dry-run client|server|none" || fail "submit --help lacks the --dry-run values"
"$ktrain" init --help | grep -q -- "pytorch|paddle|tensorflow|jax|none" || fail "init --help lacks the --framework values"
# Run names are listed where the command will run: -n, --context, --kubeconfig and
# --local typed before or after the verb are passed on to `ktrain list`.
cat >"$work/fake-ktrain" <<'FAKE'
#!/bin/sh
IFS=_; echo "args:$*"
FAKE
chmod +x "$work/fake-ktrain"
expect_words "args:list_-o_name" "$work/fake-ktrain" logs ""
expect_words "args:list_-n_team_--context_prod_-o_name" "$work/fake-ktrain" -n team logs --context prod a
expect_words "args:list_--context_prod_-o_name" "$work/fake-ktrain" status --context = prod ""
expect_words "args:list_--kubeconfig_$HOME/kc_--local_-o_name" "$work/fake-ktrain" delete --kubeconfig "~/kc" --local ""
# A run name after status/logs/delete comes from `ktrain list -o name`: none here.
export XDG_STATE_HOME="$work/state" HOME="$work/home"
unset KUBECONFIG KUBERNETES_SERVICE_HOST
mkdir -p "$HOME"
complete_words "$ktrain" delete "" >"$work/runs"
[ ! -s "$work/runs" ] || fail "run names offered where there are no runs: $(cat "$work/runs")"

# File names after -f.
mkdir "$work/proj"
touch "$work/proj/ktrain.yaml" "$work/proj/other.yaml"
(cd "$work/proj" && expect_words "ktrain.yaml" ktrain submit -f ktr) || fail "no file completion after -f"
(cd "$work/proj" && expect_words "ktrain.yaml" ktrain render --file ktr) || fail "no file completion after --file"

if command -v zsh >/dev/null; then
  zsh -n "$work/_ktrain" || fail "zsh -n rejects the zsh script"
else
  echo "skip: zsh is not installed"
fi
if command -v fish >/dev/null; then
  fish -n "$work/ktrain.fish" || fail "fish -n rejects the fish script"
  # fish completes without a terminal (complete -C): values, and run names with the
  # cluster flags passed on (the fake ktrain prints the arguments it was given).
  fish_complete() {
    PATH="$work/fakebin:$PATH" fish -c "source $work/ktrain.fish; complete -C'$1'" | cut -f1 |
      sort | tr '\n' ' ' | sed 's/ $//'
  }
  mkdir -p "$work/fakebin"
  cp "$work/fake-ktrain" "$work/fakebin/ktrain"
  got=$(fish_complete "ktrain submit --dry-run ")
  [ "$got" = "client none server" ] || fail "fish: --dry-run values: '$got'"
  got=$(fish_complete "ktrain -n team logs --context prod ")
  [ "$got" = "args:list_-n_team_--context_prod_-o_name" ] || fail "fish: run names: '$got'"
else
  echo "skip: fish is not installed"
fi

# An unknown shell: exit 2, nothing on stdout.
set +e
"$ktrain" completion tcsh >"$work/out" 2>"$work/err"
got=$?
set -e
[ "$got" = 2 ] || fail "completion tcsh exited $got, expected 2"
[ ! -s "$work/out" ] || fail "completion tcsh wrote to stdout"
grep -q "bash, zsh, fish" "$work/err" || fail "completion tcsh does not name the shells"
echo "ok: completion"
