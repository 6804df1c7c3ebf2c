import MP4Core
