#!/usr/bin/perl
# A runner in front of buildbox-run-bubblewrap for clients of REAPI v2.0, such as Bazel 4.2.3.
#
# buildbox 1.4.30's runners read a Command's outputs from `output_paths` (REAPI v2.1) only: for a
# v2.0 Command (`output_files` and `output_directories`) they neither make the outputs' parent
# directories nor collect the outputs, and every action of Bazel 4.2.3 fails with "not created".
# This gives the runner a Command with `output_paths` added (their union, sorted, as v2.1 asks),
# and an Action naming it; it passes every other argument on. A Command that has `output_paths`
# already (Bazel 7 sends both) goes through unchanged. Perl, because the worker image's
# distribution has it in its minimal base (perl-base) and it reads protobuf's wire format in a
# few lines; the Command is fetched and stored with buildbox's own casdownload and casupload.
use strict;
use warnings;
use File::Temp qw(tempdir);

my $RUNNER = "/usr/bin/buildbox-run-bubblewrap";

sub slurp {
    my ($path) = @_;
    open(my $fh, "<:raw", $path) or die "output_paths_runner: $path: $!\n";
    local $/;
    my $data = <$fh>;
    close($fh);
    return $data;
}

sub spew {
    my ($path, $data) = @_;
    open(my $fh, ">:raw", $path) or die "output_paths_runner: $path: $!\n";
    print $fh $data;
    close($fh) or die "output_paths_runner: $path: $!\n";
}

sub read_varint {
    my ($bytes, $pos) = @_;
    my ($value, $shift) = (0, 0);
    while (1) {
        my $byte = ord(substr($bytes, $pos++, 1));
        $value += ($byte & 0x7f) * (2**$shift);
        last unless $byte & 0x80;
        $shift += 7;
    }
    return ($value, $pos);
}

sub varint {
    my ($value) = @_;
    my $out = "";
    while ($value >= 0x80) {
        $out .= chr(($value % 128) | 0x80);
        $value = int($value / 128);
    }
    return $out . chr($value);
}

# [field number, value] of each field of a message: length-delimited values as bytes, varints as
# numbers, fixed-width ones as their bytes.
sub fields {
    my ($bytes) = @_;
    my ($pos, @out) = (0);
    while ($pos < length($bytes)) {
        my $key;
        ($key, $pos) = read_varint($bytes, $pos);
        my ($number, $type) = (int($key / 8), $key % 8);
        my $value;
        if ($type == 0) {
            ($value, $pos) = read_varint($bytes, $pos);
        } elsif ($type == 2) {
            my $length;
            ($length, $pos) = read_varint($bytes, $pos);
            $value = substr($bytes, $pos, $length);
            $pos += $length;
        } elsif ($type == 1 || $type == 5) {
            my $width = $type == 1 ? 8 : 4;
            $value = substr($bytes, $pos, $width);
            $pos += $width;
        } else {
            die "output_paths_runner: wire type $type in a message\n";
        }
        push @out, [$number, $value];
    }
    return @out;
}

sub bytes_field {
    my ($number, $bytes) = @_;
    return varint($number * 8 + 2) . varint(length($bytes)) . $bytes;
}

my ($action_index) = grep { $ARGV[$_] =~ /^--action=/ } 0 .. $#ARGV;
my ($remote) = map { /^--remote=(.*)$/ ? $1 : () } @ARGV;
exec($RUNNER, @ARGV)
    if grep({ $_ eq "--validate-parameters" } @ARGV) || !defined($action_index) || !defined($remote);

my $action = slurp(substr($ARGV[$action_index], length("--action=")));
my ($command_digest) = map { $_->[0] == 1 ? $_->[1] : () } fields($action);
my %digest = map { $_->[0] => $_->[1] } fields($command_digest // "");
my $hash = $digest{1} // die "output_paths_runner: the Action names no Command\n";
my $size = $digest{2} // 0;

my $dir = tempdir("output-paths-XXXXXX", TMPDIR => 1, CLEANUP => 1);
system("casdownload", "--remote=$remote", "--destination-dir=$dir/in", "--file-digest=$hash/$size") == 0
    or die "output_paths_runner: casdownload of the Command $hash/$size failed\n";
opendir(my $dh, "$dir/in") or die "output_paths_runner: $dir/in: $!\n";
my ($name) = grep { !/^\.\.?$/ } readdir($dh);
closedir($dh);
my $command = slurp("$dir/in/$name");
my @command_fields = fields($command);
exec($RUNNER, @ARGV) if grep { $_->[0] == 7 } @command_fields;
my %paths = map { $_->[1] => 1 } grep { $_->[0] == 3 || $_->[0] == 4 } @command_fields;
exec($RUNNER, @ARGV) unless %paths;
$command .= join("", map { bytes_field(7, $_) } sort keys %paths);

mkdir("$dir/out") or die "output_paths_runner: $dir/out: $!\n";
spew("$dir/out/command", $command);
system("casupload", "--remote=$remote", "$dir/out/command") == 0
    or die "output_paths_runner: casupload of the new Command failed\n";
my ($new_hash) = split(/\s+/, `sha256sum "$dir/out/command"`);
# Fields of a message given twice merge, the later value of each winning: this Digest replaces the
# Action's Command.
my $new_digest = bytes_field(1, $new_hash) . varint(2 * 8) . varint(length($command));
spew("$dir/out/action", $action . bytes_field(1, $new_digest));
$ARGV[$action_index] = "--action=$dir/out/action";
# (Not exec: the temporary directory goes when this ends.)
exit(system($RUNNER, @ARGV) >> 8);
