function __nearby_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __nearby_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __nearby_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __nearby_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __nearby_parse_tokens -S
    set -l unparsed_tokens (__nearby_tokens -pc)
    switch $unparsed_tokens[1]
    case 'nearby'
        __nearby_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'advertise'
            __nearby_parse_subcommand 0 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'info=+' 'port=' 'auto-accept' 'accept-from=+' 'encryption=' 'save-dir=' 'localsend' 'pin=' 'web' 'allow-dotfiles' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'browse'
            __nearby_parse_subcommand 0 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'timeout=' 'count=' 'peer=' 'types' 'now' 'domains' 'live' 'localsend' 'scan' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'invite'
            __nearby_parse_subcommand 1 'context=' 'timeout=' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'encryption=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'accept'
            __nearby_parse_subcommand 1 'decline' 'from=' 'timeout=' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'encryption=' 'save-dir=' 'localsend' 'pin=' 'web' 'allow-dotfiles' 'count=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'send'
            __nearby_parse_subcommand 2 'all' 'lines' 'unreliable' 'timeout=' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'encryption=' 'localsend' 'pin=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'send-file'
            __nearby_parse_subcommand -r 2 'timeout=' 'retry-for=' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'encryption=' 'localsend' 'pin=' 'web' 'keep' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'stream'
            __nearby_parse_subcommand 1 'stream=' 'listen' 'from=' 'timeout=' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'name=' 'encryption=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'disconnect'
            __nearby_parse_subcommand 1 'all' 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'identity'
            __nearby_parse_subcommand 0 'rename=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'doctor'
            __nearby_parse_subcommand 1 'service=' 'domain=+' 'no-link' 'dns-server=' 'dns-key=' 'timeout=' 'encryption=' 'localsend' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'watch'
            __nearby_parse_subcommand 0 'interface=' 'read=' 'service=' 'peer=' 'host=' 'full' 'timeout=' 'v/verbose' 'json' 'human' 'version' 'h/help'
        case 'help'
            __nearby_parse_subcommand -r 1 'version'
        end
    end
end

function __nearby_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __nearby_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __nearby_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __nearby_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__nearby_tokens -p)
    if test -z "$(__nearby_tokens -t)"
        set -l index (count (__nearby_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'nearby' -f
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'advertise' -d 'Run a node: be discoverable and take invitations until interrupted.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'browse' -d 'Print peers as they are found and lost.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'invite' -d 'Invite a peer into a session.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'accept' -d 'Accept (or --decline) an invitation.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'send' -d 'Send a message to a peer (or --all).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'send-file' -d 'Send files and directories to a peer.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'stream' -d 'Pipe stdin to a peer and the peer\'s bytes to stdout.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'disconnect' -d 'Leave the session with a peer, or with --all.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'identity' -d 'Show this peer\'s identity (created on first use), or rename it.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'doctor' -d 'Say why a peer is not seen: check the DNS-SD daemon, interfaces, multicast and the peer.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'watch' -d 'Show the link\'s mDNS packets as they pass, decoded, with the faults they reveal.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion advertise -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise"' -l 'info' -d 'Discovery info, repeatable. Each KEY=VALUE at most 255 bytes, 400 bytes in all.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" port' -l 'port' -d 'TCP port to listen on for sessions (default: any free port).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" auto-accept' -l 'auto-accept' -d 'Accept every invitation.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise"' -l 'accept-from' -d 'Accept invitations from this peer (ID, prefix or name); repeatable.' -rfka '(__nearby_custom_completion ---completion advertise -- --accept-from (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" save-dir' -l 'save-dir' -d 'Accept files from peers in session and save them here, made (mode 700) if it does not exist (default: $NEARBY_SAVE_DIR; without either, file offers are refused).' -rfa '(__nearby_complete_directories)'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" pin' -l 'pin' -d 'With --localsend: the PIN (sending: the one the receiving device asks for; receiving: the one senders must give).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" web' -l 'web' -d 'Serve a web page for any device with a browser: a link with a secret token, and a QR code at a terminal.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" allow-dotfiles' -l 'allow-dotfiles' -d 'With --web, take uploaded files whose names start with \'.\' (refused by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby advertise" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion browse -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" timeout' -l 'timeout' -d 'Stop after this many seconds (exit 0; with --peer, exit 2).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" count' -l 'count' -d 'Stop after this many peers were found (exit 0).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" peer' -l 'peer' -d 'Wait for this peer (ID, ID prefix or display name) and exit 0 when found; exit 2 if it is not found in time (default 10 s) or names several peers.' -rfka '(__nearby_custom_completion ---completion browse -- --peer (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" types' -l 'types' -d 'List every DNS-SD service type on the link with its number of instances.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" now' -l 'now' -d 'List what the link holds now and exit once the answers stop coming (no new one for 1 s), as avahi-browse -t does.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" domains' -l 'domains' -d 'List the browse domains the network offers (unicast DNS, RFC 6763 §11), under --domain or the resolver\'s search domains.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" live' -l 'live' -d 'On a terminal: a table of the peers and their hosts, redrawn in place as they come and go, the latest changes below (no root needed; in a pipe or with --json, the usual events).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" scan' -l 'scan' -d 'With --localsend: also ask every address of the local /24 over HTTPS (LocalSend\'s fallback when multicast is blocked).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby browse" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby invite" -eq 1' -fka '(__nearby_custom_completion ---completion invite -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" context' -l 'context' -d 'Context sent with the invitation (up to 4096 bytes).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" timeout' -l 'timeout' -d 'Seconds to wait for the peer to be found and to answer the invitation (default: 30).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion invite -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby invite" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby accept" -eq 1' -fka '(__nearby_custom_completion ---completion accept -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" decline' -l 'decline' -d 'Decline instead of accepting.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" from' -l 'from' -d 'Only invitations from this peer (ID, prefix or name).' -rfka '(__nearby_custom_completion ---completion accept -- --from (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" timeout' -l 'timeout' -d 'Seconds to wait for an invitation (default: no limit); then exit 4.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion accept -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" save-dir' -l 'save-dir' -d 'Accept files from peers in session and save them here, made (mode 700) if it does not exist (default: $NEARBY_SAVE_DIR; without either, file offers are refused).' -rfa '(__nearby_complete_directories)'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" pin' -l 'pin' -d 'With --localsend: the PIN (sending: the one the receiving device asks for; receiving: the one senders must give).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" web' -l 'web' -d 'Serve a web page for any device with a browser: a link with a secret token, and a QR code at a terminal.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" allow-dotfiles' -l 'allow-dotfiles' -d 'With --web, take uploaded files whose names start with \'.\' (refused by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" count' -l 'count' -d 'With --web: end once this many files arrived.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby accept" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby send" -eq 1' -fka '(__nearby_custom_completion ---completion send -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" all' -l 'all' -d 'Send to every connected peer (needs a running node).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" lines' -l 'lines' -d 'Each line of stdin is one message, sent as soon as it is read.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" unreliable' -l 'unreliable' -d 'Unreliable delivery, as MPC\'s .unreliable: UDP datagrams of at most 1200 bytes.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" timeout' -l 'timeout' -d 'Seconds to wait for the peer to be found and to answer the invitation (default: 30).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion send -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" pin' -l 'pin' -d 'With --localsend: the PIN (sending: the one the receiving device asks for; receiving: the one senders must give).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby send-file" -eq 1' -fka '(__nearby_custom_completion ---completion send-file -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby send-file" -ge 2' -F
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" timeout' -l 'timeout' -d 'Seconds to wait for the peer to be found and to answer the invitation (default: 30).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" retry-for' -l 'retry-for' -d 'How long a link that goes mid-file is tried again before the transfer fails (0: never).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion send-file -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" pin' -l 'pin' -d 'With --localsend: the PIN (sending: the one the receiving device asks for; receiving: the one senders must give).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" web' -l 'web' -d 'Serve a web page for any device with a browser: a link with a secret token, and a QR code at a terminal.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" keep' -l 'keep' -d 'With --web: keep serving after every file was downloaded (until Ctrl-C or --timeout).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby send-file" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby stream" -eq 1' -fka '(__nearby_custom_completion ---completion stream -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" stream' -l 'stream' -d 'The stream\'s name (to tell streams apart; --listen takes only that name).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" listen' -l 'listen' -d 'Wait for an incoming stream instead of opening one.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" from' -l 'from' -d 'With --listen: only a stream from this peer (without it, a stream from anyone).' -rfka '(__nearby_custom_completion ---completion stream -- --from (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" timeout' -l 'timeout' -d 'Seconds to wait for the peer to be found and to answer the invitation (default: 30).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion stream -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" name' -l 'name' -d 'Display name for this run (default: the identity\'s).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby stream" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby disconnect" -eq 1' -fka '(__nearby_custom_completion ---completion disconnect -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" all' -l 'all' -d 'Every connected peer.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion disconnect -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby disconnect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" rename' -l 'rename' -d 'Change the display name (1–63 bytes of UTF-8).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby identity" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_positional "nearby doctor" -eq 1' -fka '(__nearby_custom_completion ---completion doctor -- positional@0 (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" service' -l 'service' -d 'The service type: 1–15 lowercase letters, digits and hyphens (MPC\'s rules).' -rfka '(__nearby_custom_completion ---completion doctor -- --service (count (__nearby_tokens -pc)) (__nearby_tokens -tC))'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor"' -l 'domain' -d 'Also browse and advertise in this unicast DNS domain (wide-area DNS-SD); repeat for more.' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" no-link' -l 'no-link' -d 'With --domain: stay off the link (no mDNS); register and browse in the domains only.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" dns-server' -l 'dns-server' -d 'The DNS server for --domain: HOST or HOST:PORT ([IPv6]:PORT).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" dns-key' -l 'dns-key' -d 'The TSIG key file for --domain, as tsig-keygen writes it (HMAC-SHA256, mode 0600).' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" timeout' -l 'timeout' -d 'Seconds the run may take: every check shares one deadline from the start (default: 5).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" encryption' -l 'encryption' -d 'Session encryption: required (the default), optional or none (MPC\'s rules: required and none refuse each other).' -rfka 'required optional none'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" localsend' -l 'localsend' -d 'Talk to LocalSend devices (protocol v2) instead of nearby peers (or set NEARBY_LOCALSEND=1).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby doctor" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" interface' -l 'interface' -d 'Capture on this interface only (default: all).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" read' -l 'read' -d 'Read a capture file (pcap or pcapng) instead of the network.' -rF
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" service' -l 'service' -d 'Only packets about this service: a nearby service name (chat) or a DNS-SD type (_http._tcp).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" peer' -l 'peer' -d 'Only packets about this peer: an instance or host name, or a display name (TXT _d=).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" host' -l 'host' -d 'Only packets from, or with an address record of, this address (and its findings).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" full' -l 'full' -d 'Print NSEC type lists, TXT records and unknown data whole, not summarized.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" timeout' -l 'timeout' -d 'Stop after this many seconds (exit 0).' -rfka ''
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" v verbose' -l 'verbose' -s 'v' -d 'Explain what happens on stderr (quiet by default).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" json' -l 'json' -d 'Print events as JSON lines, even on a terminal (the default when output is not a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" human' -l 'human' -d 'Print events as lines for people, even into a pipe (the default on a terminal).'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" version' -l 'version' -d 'Show the version.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'nearby' -n '__nearby_should_offer_completions_for_flags_or_options "nearby help" version' -l 'version' -d 'Show the version.'
