#!/usr/bin/env bash
# Selects the Xcode a job runs with: `select-xcode.sh 16.0` (that version, which must be on
# the runner) or `select-xcode.sh newest` (the newest release on it: never a beta or a release
# candidate, by the app's name and by what xcodebuild says). Fails loudly, listing what is
# there, when the choice is not on the runner.
set -euo pipefail
wanted=${1:?usage: select-xcode.sh VERSION|newest}
apps=$(ls -d /Applications/Xcode_*.app 2>/dev/null || true)
[ -n "$apps" ] || { echo "::error::no Xcode on this runner"; exit 1; }
if [ "$wanted" = newest ]; then
  app=$(printf '%s\n' "$apps" | grep -viE 'beta|_rc|release_candidate' | sort -V | tail -1)
else
  app="/Applications/Xcode_${wanted}.app"
fi
if [ -z "$app" ] || [ ! -d "$app" ]; then
  echo "::error::Xcode $wanted is not on this runner image; it has:"; printf '%s\n' "$apps"; exit 1
fi
sudo xcode-select -s "$app"
version=$(xcodebuild -version)
echo "$version"
if printf '%s' "$version" | grep -qiE 'beta|release candidate'; then
  echo "::error::$app is a pre-release ($version)"; exit 1
fi
